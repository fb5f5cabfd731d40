// How long a command may wait for Redis (REDIS_TIMEOUT_MS): ioredis' own `commandTimeout`,
// one timer per command, with one change. Its timer fires in the timers phase of a loop turn,
// before that turn's poll phase reads the sockets: after the loop stalled (10,000 streams
// stall it for seconds, bench/RESULTS.md) a reply that came during the stall is waiting,
// unread, when the timer fires, and ioredis would fail a command Redis had answered. Here a
// timer that fires late (the loop was busy) waits the bound again from then; one on time
// gives a poll phase a look first (setImmediate runs after the next poll phase), and another
// while those turns take long (a poll phase busy with thousands of sockets may have begun
// before the answer came). A command fails only when Redis has said nothing for the bound and
// a quick turn of the loop then read nothing from it, or in any case past six bounds
// (decision 318).
import { Command } from 'ioredis';

/** The error of a command given up on; isCommandTimeout recognises it. */
export const COMMAND_TIMED_OUT = 'Command timed out';

/** A timer later than this (ms) means the loop was stalled, not that Redis was silent. */
const STALL_MS = 250;
/** Past this many bounds a command fails whatever the loop did: the bound stays a bound. */
const MAX_BOUNDS = 6;

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
    const giveUpAtMs = Date.now() + ms * MAX_BOUNDS;
    const expire = (dueAtMs: number): void => {
      if (this.isResolved) return;
      if (Date.now() - dueAtMs > STALL_MS && Date.now() < giveUpAtMs) {
        // Fired late: the loop was stalled, and a reply may be waiting unread. Wait again
        // from now; a Redis that is silent fails the command then.
        this._commandTimeoutTimer = globalThis.setTimeout(expire, ms, Date.now() + ms);
        return;
      }
      // The poll phase before the immediate reads what arrived before it began. A long turn
      // (a poll phase busy with thousands of sockets) may have begun before the answer came:
      // then one more turn.
      const look = (scheduledAtMs: number): void => {
        setImmediate(() => {
          if (this.isResolved) return;
          const now = Date.now();
          if (now - scheduledAtMs > STALL_MS && now < giveUpAtMs) look(now);
          else this.reject(new Error(COMMAND_TIMED_OUT));
        });
      };
      look(Date.now());
    };
    this._commandTimeoutTimer = globalThis.setTimeout(expire, ms, Date.now() + ms);
  };
}

/** True when a Redis command was given up on after REDIS_TIMEOUT_MS (it may still run). */
export function isCommandTimeout(error: unknown): boolean {
  return (error as Error | null)?.message === COMMAND_TIMED_OUT;
}
