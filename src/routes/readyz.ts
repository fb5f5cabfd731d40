// GET /readyz: whether this instance should get traffic. Ready (200) while it is not draining
// and Redis answers: every request needs Redis (holds and settles), and fails closed without it.
// Postgres down is `degraded` but still 200: known keys and users are served from the caches
// and usage waits in Redis until Postgres is back (docs/operations.md), so taking every
// instance out of the load balancer would turn a Postgres outage into a full one.
import { answer, declareRoute } from './framework/declaration.js';

export interface ReadinessProbe {
  /** Each dependency and whether it answers. */
  check(): Promise<Record<string, boolean>>;
  /** The dependencies without which the instance cannot serve at all. */
  readonly essential: readonly string[];
  /** True once the instance is shutting down. */
  isDraining(): boolean;
}

export const readyzRoute = declareRoute({
  method: 'GET',
  path: '/readyz',
  summary: 'Not draining and Redis answers (200 ready or degraded); 503 otherwise',
  caller: { kind: 'none' },
  responses: {
    200: { description: 'ready, or degraded (a non-essential dependency is down)' },
    503: { description: 'not ready: draining, or an essential dependency is down' },
  },
  async handler(_call, deps: { readonly readiness: ReadinessProbe }) {
    const checks = await deps.readiness.check();
    const draining = deps.readiness.isDraining();
    const ready = !draining && deps.readiness.essential.every((name) => checks[name] === true);
    const degraded = Object.values(checks).some((ok) => !ok);
    return answer(ready ? 200 : 503, {
      status: !ready ? 'not_ready' : degraded ? 'degraded' : 'ready',
      draining,
      checks,
    });
  },
});
