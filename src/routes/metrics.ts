// GET /metrics: Prometheus text format.
import type { Registry } from 'prom-client';
import type { Route } from '../http/types.js';

export function metricsRoute(registry: Registry): Route {
  return {
    method: 'GET',
    path: '/metrics',
    handler: async (_request, response) => {
      const text = await registry.metrics();
      response.writeHead(200, { 'content-type': registry.contentType });
      response.end(text);
    },
  };
}
