// GET /readyz: Redis and Postgres answer and the instance is not draining.
import { sendJson } from '../http/respond.js';
import { declareRoute } from './framework/declaration.js';

export interface ReadinessProbe {
  /** Resolves when ready; rejects (or resolves false) otherwise. */
  check(): Promise<Record<string, boolean>>;
  /** True once the instance is shutting down. */
  isDraining(): boolean;
}

export const readyzRoute = declareRoute({
  method: 'GET',
  path: '/readyz',
  summary: 'Redis and Postgres answer and the instance is not draining',
  caller: { kind: 'none' },
  responses: { 200: { description: 'ready' }, 503: { description: 'not ready' } },
  errors: [],
  async handler(_call, response, deps: { readonly readiness: ReadinessProbe }) {
    const checks = await deps.readiness.check();
    const draining = deps.readiness.isDraining();
    const ready = !draining && Object.values(checks).every(Boolean);
    sendJson(response, ready ? 200 : 503, {
      status: ready ? 'ready' : 'not_ready',
      draining,
      checks,
    });
  },
});
