// The fair scheduler in front of the counting threads, against a fake pool whose tasks end
// when the test says: the order tasks start in, the per-lane bound, cancellation and close.
import { describe, expect, it } from 'vitest';
import { leavingClient } from '../../test/support/leaving-client.js';
import { FairScheduler, SchedulerClosedError } from './fair-scheduler.js';

/** A pool whose tasks are started by the scheduler and ended by the test, one by one. */
class FakePool {
  readonly started: string[] = [];
  private readonly running = new Map<
    string,
    { resolve: (value: string) => void; reject: (error: unknown) => void }
  >();

  task(name: string): () => Promise<string> {
    return () => {
      this.started.push(name);
      return new Promise<string>((resolve, reject) => this.running.set(name, { resolve, reject }));
    };
  }

  /** Ends a running task with its own name as the result; lets the scheduler react. */
  async finish(name: string, failure?: unknown): Promise<void> {
    const task = this.running.get(name);
    if (!task) throw new Error(`${name} is not running`);
    this.running.delete(name);
    if (failure === undefined) task.resolve(`counted ${name}`);
    else task.reject(failure);
    await settled();
  }

  /** Ends whatever runs first, until nothing does. */
  async finishAll(): Promise<void> {
    while (this.running.size > 0) await this.finish(this.running.keys().next().value!);
  }

  get runningNames(): string[] {
    return [...this.running.keys()];
  }
}

/** Lets every promise reaction already queued run. */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function scheduler(maxRunning = 1, maxWaitingPerLane = 100) {
  return {
    pool: new FakePool(),
    fair: new FairScheduler<string>({ maxRunning, maxWaitingPerLane }),
  };
}

/** What a promise ended with, without letting a rejection go unhandled. */
function outcome(promise: Promise<string> | undefined): { value?: string; error?: Error } {
  const seen: { value?: string; error?: Error } = {};
  promise?.then(
    (value) => (seen.value = value),
    (error: Error) => (seen.error = error),
  );
  return seen;
}

describe('FairScheduler', () => {
  it('serves the lanes with tasks waiting in turn, not in arrival order', async () => {
    const { pool, fair } = scheduler(1);
    const results = ['a1', 'a2', 'a3', 'a4'].map((name) => fair.tryRun('org_a', pool.task(name)));
    results.push(fair.tryRun('org_b', pool.task('b1')), fair.tryRun('org_b', pool.task('b2')));
    results.push(fair.tryRun('org_c', pool.task('c1')));
    expect(pool.started).toEqual(['a1']);
    expect(fair.waiting).toBe(6);
    await pool.finishAll();
    // A was first in turn when a1 ended; then each lane gets one task per turn.
    expect(pool.started).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4']);
    expect(await Promise.all(results)).toEqual(
      ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'c1'].map((name) => `counted ${name}`),
    );
    expect(fair.waiting).toBe(0);
  });

  it('hands the pool at most maxRunning tasks at once, and a freed slot at once', async () => {
    const { pool, fair } = scheduler(2);
    for (const name of ['a1', 'a2', 'a3']) void fair.tryRun('org_a', pool.task(name));
    void fair.tryRun('org_b', pool.task('b1'));
    expect(pool.runningNames).toEqual(['a1', 'a2']);
    await pool.finish('a2');
    expect(pool.runningNames).toEqual(['a1', 'a3']);
    await pool.finish('a1');
    expect(pool.runningNames).toEqual(['a3', 'b1']);
  });

  it("lets another lane's task wait for the running ones only, whatever one lane has queued", async () => {
    const { pool, fair } = scheduler(1);
    for (let index = 0; index < 50; index += 1) void fair.tryRun('org_a', pool.task(`a${index}`));
    const counted = outcome(fair.tryRun('org_b', pool.task('b')));
    await pool.finish('a0');
    // a1 was first in turn when a0 ended (B joined the turn last); b is next.
    await pool.finish('a1');
    expect(pool.runningNames).toEqual(['b']);
    await pool.finish('b');
    expect(counted.value).toBe('counted b');
    expect(fair.waiting).toBe(47); // a3…a49: a2 runs
  });

  it('starves no lane: a lane that refills itself without end leaves room for every other', async () => {
    const { pool, fair } = scheduler(1);
    let flooded = 0;
    const flood = (): void => {
      flooded += 1;
      void fair.tryRun('org_a', pool.task(`a${flooded}`))?.then(
        () => {
          // Every count of A that ends brings two more.
          if (flooded < 200) {
            flood();
            flood();
          }
        },
        () => undefined, // refused at close
      );
    };
    for (let index = 0; index < 10; index += 1) flood(); // a backlog from the start
    const others = ['b', 'c', 'd'].map((lane) =>
      [1, 2].map((n) => outcome(fair.tryRun(lane, pool.task(`${lane}${n}`)))),
    );
    for (let ended = 0; ended < 9; ended += 1) await pool.finish(pool.runningNames[0]!);
    // Nine ends: a1, then a turn of A, B, C, D, then another: all six of theirs ran.
    expect(others.flat().map((seen) => seen.value)).toEqual(
      ['b1', 'b2', 'c1', 'c2', 'd1', 'd2'].map((name) => `counted ${name}`),
    );
    expect(fair.waiting).toBeGreaterThan(0); // A's flood still waits
    fair.close();
    await pool.finishAll();
  });

  it('refuses a task past maxWaitingPerLane at once and nothing starts; other lanes and run() are not bounded by it', async () => {
    const { pool, fair } = scheduler(1, 2);
    void fair.tryRun('org_a', pool.task('a1')); // runs: not waiting
    void fair.tryRun('org_a', pool.task('a2'));
    void fair.tryRun('org_a', pool.task('a3'));
    expect(fair.tryRun('org_a', pool.task('a4'))).toBeUndefined();
    expect(fair.tryRun('org_b', pool.task('b1'))).toBeInstanceOf(Promise);
    // Work already committed to (a stream's end, counted to charge it) is never refused.
    const committed = outcome(fair.run('org_a', pool.task('a-end')));
    expect(fair.waiting).toBe(4);
    await pool.finish('a1');
    // One of A's started: the lane holds a3 and a-end, still two waiting.
    expect(fair.tryRun('org_a', pool.task('a5'))).toBeUndefined();
    await pool.finishAll();
    expect(pool.started).toEqual(['a1', 'a2', 'b1', 'a3', 'a-end']);
    expect(committed.value).toBe('counted a-end');
    expect(fair.tryRun('org_a', pool.task('a6'))).toBeInstanceOf(Promise);
  });

  it('takes a cancelled task out of its lane without running it, and frees its place', async () => {
    const { pool, fair } = scheduler(1, 2);
    void fair.tryRun('org_a', pool.task('a1'));
    const leaving = leavingClient();
    const cancelled = outcome(fair.tryRun('org_a', pool.task('a2'), leaving));
    void fair.tryRun('org_a', pool.task('a3'));
    expect(fair.tryRun('org_a', pool.task('refused'))).toBeUndefined();
    leaving.leave();
    await settled();
    expect(cancelled.error).toMatchObject({
      name: 'AbortError',
      message: 'the request went away before counting',
    });
    expect(fair.waiting).toBe(1);
    const taken = outcome(fair.tryRun('org_a', pool.task('a4')));
    await pool.finishAll();
    expect(pool.started).toEqual(['a1', 'a3', 'a4']);
    expect(taken.value).toBe('counted a4');
  });

  it('stops waiting for a running task whose client went away, and keeps its slot until it ends', async () => {
    const { pool, fair } = scheduler(1);
    const leaving = leavingClient();
    const cancelled = outcome(fair.tryRun('org_a', pool.task('a1'), leaving));
    void fair.tryRun('org_b', pool.task('b1'));
    leaving.leave();
    await settled();
    expect(cancelled.error).toMatchObject({
      name: 'AbortError',
      message: 'the request went away while counting',
    });
    // The thread still counts a1 (bounded, a few ms): b1 waits for it, not for the abort.
    expect(pool.runningNames).toEqual(['a1']);
    await pool.finish('a1');
    expect(pool.runningNames).toEqual(['b1']);
    expect(cancelled.value).toBeUndefined();
  });

  it('refuses a task whose client has already gone without queueing it', async () => {
    const { pool, fair } = scheduler(1);
    const gone = leavingClient();
    gone.leave();
    await expect(fair.tryRun('org_a', pool.task('a1'), gone)).rejects.toMatchObject({
      name: 'AbortError',
      message: 'the request went away before counting',
    });
    expect([pool.started, fair.waiting]).toEqual([[], 0]);
  });

  it("passes a task's failure on, as an Error, and goes on with the next", async () => {
    const { pool, fair } = scheduler(1);
    const failing = outcome(fair.tryRun('org_a', pool.task('a1')));
    const odd = outcome(fair.tryRun('org_a', pool.task('a2')));
    const next = outcome(fair.tryRun('org_b', pool.task('b1')));
    await pool.finish('a1', new RangeError('worker failed'));
    await pool.finish('a2', 'not an error');
    await pool.finish('b1');
    expect(failing.error).toEqual(new RangeError('worker failed'));
    expect(odd.error).toEqual(new Error('not an error'));
    expect(next.value).toBe('counted b1');
  });

  it('at close refuses the waiting tasks (never run) and later ones; running ones end', async () => {
    const { pool, fair } = scheduler(1);
    const running = outcome(fair.tryRun('org_a', pool.task('a1')));
    const waiting = [
      outcome(fair.tryRun('org_a', pool.task('a2'))),
      outcome(fair.tryRun('org_b', pool.task('b1'))),
    ];
    fair.close();
    await settled();
    for (const seen of waiting) expect(seen.error).toBeInstanceOf(SchedulerClosedError);
    expect(fair.waiting).toBe(0);
    await pool.finish('a1');
    expect(running.value).toBe('counted a1');
    expect(pool.started).toEqual(['a1']);
    await expect(fair.tryRun('org_a', pool.task('late'))).rejects.toBeInstanceOf(
      SchedulerClosedError,
    );
    await expect(fair.run('org_a', pool.task('late'))).rejects.toBeInstanceOf(SchedulerClosedError);
    expect(pool.started).toEqual(['a1']);
  });
});
