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

/**
 * Calls `expire` once `ms` have passed with `done()` still false (see above); past
 * `maxBounds × ms` it expires whatever the loop did (1: one look, never a second bound).
 * `onArm` sees each timer it sets (ioredis clears its command's own). Returns a cancel.
 */
export function stallTolerantTimeout(
  ms: number,
  maxBounds: number,
  done: () => boolean,
  expire: () => void,
  onArm: (timer: NodeJS.Timeout) => void = () => undefined,
): () => void {
  const giveUpAtMs = Date.now() + ms * maxBounds;
  let timer: NodeJS.Timeout | undefined;
  let turn: NodeJS.Immediate | undefined;
  const arm = (): void => {
    const dueAtMs = Date.now() + ms;
    timer = setTimeout(() => fire(dueAtMs), ms);
    onArm(timer);
  };
  const fire = (dueAtMs: number): void => {
    if (done()) return;
    // Fired late: the loop was stalled, and an answer may be waiting unread. Wait again from
    // now; a dependency that is silent expires then.
    if (Date.now() - dueAtMs > STALL_MS && Date.now() < giveUpAtMs) return arm();
    look(Date.now());
  };
  const look = (scheduledAtMs: number): void => {
    turn = setImmediate(() => {
      if (done()) return;
      const now = Date.now();
      if (now - scheduledAtMs > STALL_MS && now < giveUpAtMs) look(now);
      else expire();
    });
  };
  arm();
  return () => {
    clearTimeout(timer);
    clearImmediate(turn);
  };
}
