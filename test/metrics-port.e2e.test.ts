// /metrics is never served on the public port: it has its own listener, on loopback unless
// configured otherwise (METRICS_HOST, METRICS_PORT).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { isolatedContext } from './support/context.js';
import { metricsUrl, startGateway, type GatewayProcess } from './support/processes.js';

const { env } = isolatedContext('metrics-port');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway(env);
});
afterAll(async () => {
  await gateway?.stop();
});

describe('/metrics on its own listener', () => {
  it('answers 404 on the public port', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
      'gw_route_not_found',
    );
  });

  it('serves Prometheus text on the metrics listener, and nothing else there', async () => {
    const response = await fetch(metricsUrl(gateway));
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('process_cpu_seconds_total');
    const other = await fetch(metricsUrl(gateway).replace('/metrics', '/v1/models'));
    expect(other.status).toBe(404);
  });

  it('binds the metrics listener to loopback by default', () => {
    const config = loadConfig({});
    expect(config.METRICS_HOST).toBe('127.0.0.1');
    expect(config.METRICS_PORT).toBe(9464);
  });
});
