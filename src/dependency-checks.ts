// Whether this instance's dependencies answer, for /readyz and the scrape's gw_dependency_up.
//
// Each check is bounded: a dependency that has not answered within the bound is down for that
// answer. Unbounded, a hung Postgres (or a pool with no free connection) held /readyz for
// DATABASE_TIMEOUT_MS plus 2 s, past any probe's own time-out, and a probe that times out is a
// failed probe: Kubernetes took every pod out of the Service for an outage that /readyz means
// to report as `degraded` (routes/readyz.ts). The scrape, bounded on its side, kept the last
// value, so gw_dependency_up said 1 all through the hang.
//
// One check per dependency runs at a time: a probe or scrape arriving while one runs waits on
// it (within its own bound) instead of sending another statement to a server that does not
// answer, so probes cannot pile connections onto it.
import { stallTolerantTimeout, type StallTolerantTarget } from './stall-tolerant-timeout.js';

/** One dependency's check: true when it answered. A rejection counts as down. */
export type DependencyCheck = () => Promise<boolean>;

/** Runs every check at once; each is down if it rejects or has not answered within `timeoutMs`. */
export function boundedDependencyChecks(
  checks: Readonly<Record<string, DependencyCheck>>,
  timeoutMs: number,
): () => Promise<Record<string, boolean>> {
  const shared = Object.entries(checks).map(([name, check]) => [name, sharedRun(check)] as const);
  return async () => {
    const answers = await Promise.all(shared.map(([, run]) => within(run(), timeoutMs)));
    return Object.fromEntries(shared.map(([name], index) => [name, answers[index]!]));
  };
}

/** The check's run in progress if there is one, else a new run. */
function sharedRun(check: DependencyCheck): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  return () => {
    running ??= check()
      .catch(() => false)
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}

/** A check's time-out resolves its answer to false; the race has the real answer first. */
const ANSWER_FALSE: StallTolerantTarget<(up: boolean) => void> = {
  done: () => false,
  expire: (resolve) => resolve(false),
};

/**
 * The answer, or false once `timeoutMs` has passed without one. After a stall (a busy
 * instance) Node runs due timers before it reads the sockets: an answer that arrived during
 * the stall would lose to a plain timer and a dependency that answered would be reported down
 * (Redis down: 503, the instance out of its Service for being busy). So the bound gives up
 * only after one more turn of the loop, whose poll phase reads what has arrived, and never
 * waits a second bound (the scrape waits 2 s on its probes).
 */
async function within(answer: Promise<boolean>, timeoutMs: number): Promise<boolean> {
  let timeout: { cancel(): void } | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timeout = stallTolerantTimeout(resolve, ANSWER_FALSE, timeoutMs, 1);
  });
  try {
    return await Promise.race([answer, timedOut]);
  } finally {
    timeout?.cancel();
  }
}
