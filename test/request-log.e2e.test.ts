// The request log an operator reads: one line per request at info, with ids, never secrets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { eventually } from './support/services.js';

const { env } = isolatedContext('reqlog');
const gateways: GatewayProcess[] = [];
let org: SeededOrg;

const PROMPT = 'a secret prompt that must never be logged';

function requestLines(gateway: GatewayProcess): Array<Record<string, unknown>> {
  return gateway
    .output()
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The request lines once `count` are there (pino writes asynchronously). */
function linesOnceThere(gateway: GatewayProcess, count: number) {
  return eventually(() => {
    const lines = requestLines(gateway);
    return Promise.resolve(lines.length >= count ? lines : undefined);
  });
}

beforeAll(async () => {
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('request log', () => {
  it('logs one line per request with route, status, latency, model, org and product user', async () => {
    const gateway = await startGateway(env);
    gateways.push(gateway);
    const response = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] },
      { ...bearer(org.api_key), 'x-gw-external-user-id': 'logged-user' },
    );
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id');
    const refused = await postJson(`${gateway.url}/v1/chat/completions`, {}, bearer(org.api_key));
    expect(refused.status).toBe(400);

    const [ok, bad] = await linesOnceThere(gateway, 2);
    expect(ok).toMatchObject({
      level: 30,
      requestId,
      method: 'POST',
      route: '/v1/chat/completions',
      status: 200,
      model: 'vendor_b/gpt-4o-mini',
      orgId: org.org_id,
    });
    expect(ok!.productUserId).toMatch(/^pu_|^peu_|^[a-z]+_/);
    expect(typeof ok!.durationMs).toBe('number');
    expect(bad).toMatchObject({
      status: 400,
      orgId: org.org_id,
      route: '/v1/chat/completions',
      errorCode: 'gw_invalid_request',
    });
    expect(ok).not.toHaveProperty('errorCode');
    expect(gateway.output()).not.toContain(PROMPT);
    expect(gateway.output()).not.toContain(org.api_key);
  });

  it('REQUEST_LOG_SAMPLE_RATE=0 drops successes but keeps errors', async () => {
    const gateway = await startGateway({ ...env, REQUEST_LOG_SAMPLE_RATE: '0' });
    gateways.push(gateway);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${gateway.url}/no-such-route`)).status).toBe(404);
    expect(await linesOnceThere(gateway, 1)).toMatchObject([
      { route: 'unmatched', status: 404, errorCode: 'gw_route_not_found' },
    ]);
  });
});
