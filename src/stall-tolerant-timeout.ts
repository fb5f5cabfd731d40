// A time-out that a stalled event loop does not trip. A timer fires in the timers phase of a
// loop turn, before that turn's poll phase reads the sockets: after the loop stalled (10,000
// streams stall it for seconds, bench/RESULTS.md) an answer that came during the stall is
// waiting, unread, when the timer fires, and a plain time-out would give up on a dependency
// that had answered. Here a timer that fires late (the loop was busy) waits the bound again
// from then; one on time gives a poll phase a look first (setImmediate runs after the next
// poll phase), and another while those turns take long (a poll phase busy with thousands of
// sockets may have begun before the answer came). It expires only when the bound has passed
// and a quick turn of the loop then found nothing done, or in any case past `maxBounds`
// bounds. Used by the Redis command bound (src/redis/command-timeout.ts) and the dependency
// checks (src/dependency-checks.ts).

/** A timer later than this (ms) means the loop was stalled, not that the dependency was silent. */
export const STALL_MS = 250;

/** What a time-out watches: a command, a check; passed to `done` and `expire` as they are. */
export interface StallTolerantTarget<T> {
  /** True once the answer came: nothing expires then. */
  done(subject: T): boolean;
  expire(subject: T): void;
  /** Sees each timer set (ioredis clears its command's own). */
  armed?(subject: T, timer: NodeJS.Timeout): void;
}

/**
 * Calls `target.expire(subject)` once `ms` have passed with `target.done(subject)` still false
 * (see above); past `maxBounds × ms` it expires whatever the loop did (1: one look, never a
 * second bound). One object per time-out and no closure (a Redis command has one each): the
 * target's functions take the subject. `cancel()` stops it.
 */
export function stallTolerantTimeout<T>(
  subject: T,
  target: StallTolerantTarget<T>,
  ms: number,
  maxBounds: number,
): { cancel(): void } {
  return new StallTolerantTimeout(subject, target, ms, Date.now() + ms * maxBounds);
}

class StallTolerantTimeout<T> {
  private timer: NodeJS.Timeout | undefined;
  private turn: NodeJS.Immediate | undefined;

  constructor(
    private readonly subject: T,
    private readonly target: StallTolerantTarget<T>,
    private readonly ms: number,
    private readonly giveUpAtMs: number,
  ) {
    this.arm();
  }

  cancel(): void {
    clearTimeout(this.timer);
    clearImmediate(this.turn);
  }

  private arm(): void {
    this.timer = setTimeout(fire, this.ms, this, Date.now() + this.ms);
    this.target.armed?.(this.subject, this.timer);
  }

  fire(dueAtMs: number): void {
    if (this.target.done(this.subject)) return;
    // Fired late: the loop was stalled, and an answer may be waiting unread. Wait again from
    // now; a dependency that is silent expires then.
    if (Date.now() - dueAtMs > STALL_MS && Date.now() < this.giveUpAtMs) return this.arm();
    this.look(Date.now());
  }

  look(scheduledAtMs: number): void {
    this.turn = setImmediate(lookAgain, this, scheduledAtMs);
  }

  lookAgain(scheduledAtMs: number): void {
    if (this.target.done(this.subject)) return;
    const now = Date.now();
    if (now - scheduledAtMs > STALL_MS && now < this.giveUpAtMs) this.look(now);
    else this.target.expire(this.subject);
  }
}

// The timers' callbacks, shared: each gets its time-out as an argument.
function fire(timeout: StallTolerantTimeout<unknown>, dueAtMs: number): void {
  timeout.fire(dueAtMs);
}

function lookAgain(timeout: StallTolerantTimeout<unknown>, scheduledAtMs: number): void {
  timeout.lookAgain(scheduledAtMs);
}
