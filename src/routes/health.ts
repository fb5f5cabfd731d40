// GET /healthz (the process is up) and GET /readyz (its dependencies answer).
import { sendJson } from '../http/respond.js';
import type { Route } from '../http/types.js';

export interface ReadinessProbe {
  /** Resolves when ready; rejects (or resolves false) otherwise. */
  check(): Promise<Record<string, boolean>>;
}

export function healthRoutes(readiness: ReadinessProbe, isDraining: () => boolean): Route[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      handler: (_request, response) => sendJson(response, 200, { status: 'ok' }),
    },
    {
      method: 'GET',
      path: '/readyz',
      handler: async (_request, response) => {
        const checks = await readiness.check();
        const ready = !isDraining() && Object.values(checks).every(Boolean);
        sendJson(response, ready ? 200 : 503, {
          status: ready ? 'ready' : 'not_ready',
          draining: isDraining(),
          checks,
        });
      },
    },
  ];
}
