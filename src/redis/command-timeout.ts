// How long a command may wait for Redis (REDIS_TIMEOUT_MS): ioredis' own `commandTimeout`,
// one timer per command, made tolerant of a stalled event loop (src/stall-tolerant-timeout.ts):
// ioredis' plain timer would fail, after a stall, a command whose reply came during it and
// waits unread. A command fails only when Redis has said nothing for the bound and a quick
// turn of the loop then read nothing from it, or in any case past six bounds (decision 318).
import { Command } from 'ioredis';
import { stallTolerantTimeout, type StallTolerantTarget } from '../stall-tolerant-timeout.js';

/** The error of a command given up on; isCommandTimeout recognises it. */
export const COMMAND_TIMED_OUT = 'Command timed out';

/** Past this many bounds a command fails whatever the loop did: the bound stays a bound. */
const MAX_BOUNDS = 6;

interface TimedCommand {
  isResolved: boolean;
  _commandTimeoutTimer?: NodeJS.Timeout;
  reject(error: Error): void;
}

/** A command's answer, give-up and timer, as the stall-tolerant time-out sees them. */
const COMMAND: StallTolerantTarget<TimedCommand> = {
  done: (command) => command.isResolved,
  expire: (command) => command.reject(new Error(COMMAND_TIMED_OUT)),
  armed: (command, timer) => (command._commandTimeoutTimer = timer),
};

type SetTimeout = (this: TimedCommand, ms: number) => void;
/**
 * Where the first copy of this module to replace ioredis' timer keeps the one it replaced: a
 * test process holds two copies (src/, and dist/ that its in-process gateways run), and the
 * second to load finds the first one's replacement on ioredis' class.
 */
const IOREDIS_TIMER = Symbol.for('gw.ioredisCommandTimer');
const commandPrototype = Command.prototype as unknown as {
  setTimeout: SetTimeout;
  [IOREDIS_TIMER]?: SetTimeout;
};

/**
 * ioredis' own per-command timer, as found before any copy of this module replaced it: what
 * its tests compare the stall-tolerant one with.
 */
export const ioredisCommandTimer: SetTimeout =
  commandPrototype[IOREDIS_TIMER] ?? commandPrototype.setTimeout;

let installed = false;

/**
 * Makes ioredis' `commandTimeout` tolerate a stalled event loop (above). Process-wide (it
 * changes ioredis' Command class); idempotent. connectRedis calls it for every client that
 * has a bound.
 */
export function installStallTolerantTimeout(): void {
  if (installed) return;
  installed = true;
  commandPrototype[IOREDIS_TIMER] ??= commandPrototype.setTimeout;
  commandPrototype.setTimeout = function setTimeout(this: TimedCommand, ms: number): void {
    if (this._commandTimeoutTimer) return;
    stallTolerantTimeout(this, COMMAND, ms, MAX_BOUNDS);
  };
}

/** True when a Redis command was given up on after REDIS_TIMEOUT_MS (it may still run). */
export function isCommandTimeout(error: unknown): boolean {
  return (error as Error | null)?.message === COMMAND_TIMED_OUT;
}
