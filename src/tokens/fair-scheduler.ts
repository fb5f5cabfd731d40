// Shares the counting threads fairly between organizations. Piscina's own queue is one FIFO:
// an organization that floods counts (count_tokens is free) put every other organization's
// admissions behind its whole backlog. Here each organization waits in a lane of its own, at
// most `maxRunning` tasks are handed to the pool at once (so its FIFO never holds a backlog),
// and a freed slot goes to the next lane in turn (round robin over the lanes with tasks
// waiting): another organization's count waits for the tasks already running, one per thread,
// and one turn of each other lane, never for a backlog. A lane holds at most
// `maxWaitingPerLane` tasks that may be refused; past it `tryRun` refuses at once.

/**
 * The client a count is made for (a route's HTTP response). Not an AbortSignal: Node's
 * AbortController, made for every request, kept each request's objects alive through young
 * garbage collections (about 30 MB promoted per 6 s at 10 k req/s; bench/RESULTS.md,
 * 2026-11-23), and only the rare count that goes to a worker needs to hear of the abort.
 */
export interface CountingFor {
  readonly aborted: boolean;
  /** Called once if the client goes away (at once if it already has). */
  onAborted(listener: () => void): void;
}

/** What a count rejects with when its request went away. */
export class CountCancelledError extends Error {
  override readonly name = 'AbortError';
}

/** What a task rejects with when the scheduler closed before it ran. */
export class SchedulerClosedError extends Error {
  constructor() {
    super('the token counter is closed');
    this.name = 'SchedulerClosedError';
  }
}

/**
 * Waiting tasks per lane by default (the gateway's TOKEN_QUEUE_PER_ORG). The last of a full
 * lane waits for about 64 counts spread over the threads: a few ms for ordinary prompts, under
 * a second at the slowest input measured (decision 351).
 */
export const DEFAULT_MAX_WAITING_PER_LANE = 64;

export interface FairSchedulerOptions {
  /** Tasks handed to the pool at once: its threads (see decision 351). */
  readonly maxRunning: number;
  /** Waiting tasks a lane may hold before `tryRun` refuses another. */
  readonly maxWaitingPerLane: number;
}

interface Waiting<Result> {
  readonly start: () => Promise<Result>;
  readonly resolve: (result: Result) => void;
  readonly reject: (error: Error) => void;
  /** Set once it left its lane (started, cancelled or closed): nothing else may settle it. */
  done: boolean;
}

export class FairScheduler<Result> {
  /** Lanes with tasks waiting, in their turn order: the first is served next. */
  private readonly lanes = new Map<string, Array<Waiting<Result>>>();
  private running = 0;
  private waitingCount = 0;
  private closed = false;

  constructor(private readonly options: FairSchedulerOptions) {}

  /** Tasks waiting in every lane (not yet handed to the pool). */
  get waiting(): number {
    return this.waitingCount;
  }

  /**
   * Runs `start` in its lane's turn; undefined (refused, nothing started) when the lane
   * already holds `maxWaitingPerLane` waiting tasks. Rejects with an AbortError once `client`
   * has gone: a waiting task then leaves its lane without running, a running one is no longer
   * waited for (its result is dropped; its thread is busy until it ends, a few ms).
   */
  tryRun(
    lane: string,
    start: () => Promise<Result>,
    client?: CountingFor,
  ): Promise<Result> | undefined {
    const queue = this.lanes.get(lane);
    if (queue && queue.length >= this.options.maxWaitingPerLane) return undefined;
    return this.run(lane, start, client);
  }

  /**
   * Runs `start` in its lane's turn, however many tasks wait there: for work the gateway
   * already committed to (a stream's end is counted to be charged), which a client cannot
   * multiply without being admitted and charged for each.
   */
  run(lane: string, start: () => Promise<Result>, client?: CountingFor): Promise<Result> {
    if (this.closed) return Promise.reject(new SchedulerClosedError());
    if (client?.aborted) {
      return Promise.reject(new CountCancelledError('the request went away before counting'));
    }
    return new Promise<Result>((resolve, reject) => {
      const task: Waiting<Result> = { start, resolve, reject, done: false };
      if (this.running < this.options.maxRunning) this.begin(task);
      else this.enqueue(lane, task);
      // A running task is not stopped: its work is bounded (count.ts), and piscina's own
      // abort of a running task races the worker's answer and can throw outside any promise.
      // An abort after the task settled rejects a settled promise: nothing.
      client?.onAborted(() => {
        const wasWaiting = !task.done;
        if (wasWaiting) this.remove(lane, task);
        reject(
          new CountCancelledError(
            wasWaiting
              ? 'the request went away before counting'
              : 'the request went away while counting',
          ),
        );
      });
    });
  }

  /** Refuses every waiting task and any later one; tasks already running finish. */
  close(): void {
    this.closed = true;
    const lanes = [...this.lanes.values()];
    this.lanes.clear();
    this.waitingCount = 0;
    for (const queue of lanes) {
      for (const task of queue) {
        task.done = true;
        task.reject(new SchedulerClosedError());
      }
    }
  }

  private enqueue(lane: string, task: Waiting<Result>): void {
    const queue = this.lanes.get(lane);
    if (queue) queue.push(task);
    else this.lanes.set(lane, [task]); // a lane with nothing waiting joins the turn last
    this.waitingCount += 1;
  }

  private remove(lane: string, task: Waiting<Result>): void {
    task.done = true;
    const queue = this.lanes.get(lane);
    const index = queue?.indexOf(task) ?? -1;
    if (!queue || index < 0) return;
    queue.splice(index, 1);
    this.waitingCount -= 1;
    if (queue.length === 0) this.lanes.delete(lane);
  }

  private begin(task: Waiting<Result>): void {
    task.done = true;
    this.running += 1;
    let result: Promise<Result>;
    try {
      result = task.start();
    } catch (error) {
      result = Promise.reject(error as Error);
    }
    // A task cancelled while it ran was already rejected: settling it again does nothing.
    result.then(
      (value) => {
        this.finished();
        task.resolve(value);
      },
      (error: unknown) => {
        this.finished();
        task.reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  private finished(): void {
    this.running -= 1;
    this.startNext();
  }

  /** Hands the freed slot to the first lane in turn; that lane goes to the back if it has more. */
  private startNext(): void {
    const next = this.lanes.entries().next();
    if (next.done === true) return;
    const [lane, queue] = next.value;
    const task = queue.shift()!;
    this.waitingCount -= 1;
    this.lanes.delete(lane);
    if (queue.length > 0) this.lanes.set(lane, queue);
    this.begin(task);
  }
}
