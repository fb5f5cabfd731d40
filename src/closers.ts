// What the composition root has started, to close in reverse order: at shutdown, and when
// start-up fails halfway (a port taken, Postgres gone after the pool opened), so a failed start
// leaves no connection, thread or timer behind.
import type { Logger } from './log.js';

interface Closer {
  readonly name: string;
  readonly close: () => unknown;
  /** The longest closeAll waits for it; unset: until it ends. */
  readonly waitMs: number | undefined;
}

export class Closers {
  private readonly stack: Closer[] = [];

  /**
   * Registers how to close what was just started; returns the resource for inline use. With
   * `waitMs`, closeAll waits for it at most that long (a close that waits on another machine:
   * Postgres's answer to a pool's goodbye, Redis's to a replay) and goes on, logging it.
   */
  add<T>(name: string, resource: T, close: (resource: T) => unknown, waitMs?: number): T {
    this.stack.push({ name, close: () => close(resource), waitMs });
    return resource;
  }

  /**
   * Closes everything registered, last first. A closer that fails is logged (by name, never
   * with secrets) and the rest still run; the first failure is rethrown at the end.
   */
  async closeAll(logger: Logger): Promise<void> {
    let firstFailure: unknown;
    for (let closer = this.stack.pop(); closer; closer = this.stack.pop()) {
      const { name, waitMs } = closer;
      const closing = Promise.resolve()
        .then(closer.close)
        .catch((error: unknown) => {
          logger.error({ err: error, resource: name }, 'closing failed');
          firstFailure ??= error;
        });
      if (waitMs === undefined) await closing;
      else if (!(await waitAtMost(closing, waitMs))) {
        logger.warn({ resource: name, waitMs }, 'closing did not end in time: left behind');
      }
    }
    if (firstFailure !== undefined) throw firstFailure;
  }
}

/**
 * Waits for `work` at most `ms`: resolves true when it ended in time (failed or not), false
 * when it did not; what is left goes on unwaited, its failure ignored. For a stop whose wait
 * must stay within the sum an orchestrator's kill deadline is checked against (decision 408).
 */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms), false))),
  ]);
  clearTimeout(timer);
  return ended;
}
