// How long a command may wait for Redis (REDIS_TIMEOUT_MS): ioredis' own `commandTimeout`,
// one timer per command, with one change. Its timer fires in the timers phase of a loop turn,
// before that turn's poll phase reads the sockets: after the loop stalled (10,000 streams
// stall it for seconds, bench/RESULTS.md) a reply that came during the stall is waiting,
// unread, when the timer fires, and ioredis would fail a command Redis had answered. Here a
// timer that fires late (the loop was busy) waits once more, as long as the loop then stays
// responsive; and even an on-time timer gives the poll phase of its turn a look
// (setImmediate: after the poll phase) before it fails the command. A command fails only when
// Redis has said nothing for the bound while the loop was free to read it (decision 31A).
import { Command } from 'ioredis';

/** The error of a command given up on; isCommandTimeout recognises it. */
export const COMMAND_TIMED_OUT = 'Command timed out';

/** A timer later than this (ms) means the loop was stalled, not that Redis was silent. */
const STALL_MS = 250;

interface TimedCommand {
  isResolved: boolean;
  _commandTimeoutTimer?: NodeJS.Timeout;
  reject(error: Error): void;
}

let installed = false;

/**
 * Makes ioredis' `commandTimeout` tolerate a stalled event loop (above). Process-wide (it
 * changes ioredis' Command class); idempotent. connectRedis calls it for every client that
 * has a bound.
 */
export function installStallTolerantTimeout(): void {
  if (installed) return;
  installed = true;
  const prototype = Command.prototype as unknown as {
    setTimeout(this: TimedCommand, ms: number): void;
  };
  prototype.setTimeout = function setTimeout(this: TimedCommand, ms: number): void {
    if (this._commandTimeoutTimer) return;
    const expire = (dueAtMs: number): void => {
      if (this.isResolved) return;
      if (Date.now() - dueAtMs > STALL_MS) {
        // Fired late: the loop was stalled, and a reply may be waiting unread. Wait again
        // from now; a Redis that is silent fails the command then.
        this._commandTimeoutTimer = globalThis.setTimeout(expire, ms, Date.now() + ms);
        return;
      }
      // The poll phase of this turn reads what arrived; then, still no answer: time out.
      setImmediate(() => {
        if (!this.isResolved) this.reject(new Error(COMMAND_TIMED_OUT));
      });
    };
    this._commandTimeoutTimer = globalThis.setTimeout(expire, ms, Date.now() + ms);
  };
}

/** True when a Redis command was given up on after REDIS_TIMEOUT_MS (it may still run). */
export function isCommandTimeout(error: unknown): boolean {
  return (error as Error | null)?.message === COMMAND_TIMED_OUT;
}
