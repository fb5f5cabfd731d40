// GET /healthz: the process is up.
import { declareRoute } from './framework/declaration.js';

export const healthzRoute = declareRoute({
  method: 'GET',
  path: '/healthz',
  summary: 'The process is up',
  caller: { kind: 'none' },
  responses: { 200: { description: 'ok' } },
  handler() {
    return { status: 'ok' };
  },
});
