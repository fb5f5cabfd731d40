// GET /metrics: Prometheus text format (operational; not part of the public schema).
import type { Registry } from 'prom-client';
import { nosniffHeaders } from '../http/respond.js';
import { declareRoute } from './framework/declaration.js';

export const metricsRoute = declareRoute({
  method: 'GET',
  path: '/metrics',
  summary: 'Prometheus metrics',
  caller: { kind: 'none' },
  responses: { 200: { description: 'Prometheus text format' } },
  undocumented: true,
  async handler({ response }, deps: { readonly metricsRegistry: Registry }) {
    const text = await deps.metricsRegistry.metrics();
    response.writeHead(200, {
      'content-type': deps.metricsRegistry.contentType,
      ...nosniffHeaders,
    });
    response.end(text);
  },
});
