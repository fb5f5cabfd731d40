// Load shedding (decision 335): with SHED_LOOP_DELAY_MS set, a request that arrives while the
// event loop runs that late is answered 503 at once and its connection closed, health checks are
// served, requests already in flight go on, and new ones are served again once the loop keeps
// time. The gateway is a real process, stopped (SIGSTOP) to make its loop late: requests sent
// meanwhile wait in the kernel and are read after SIGCONT, before the loop's next timer.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  metricsUrl,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';

const { env } = isolatedContext('load-shedding');
const SHED_MS = 500;
let org: SeededOrg;
let gateway: SpawnedGateway;

beforeAll(async () => {
  [org, gateway] = await Promise.all([
    seed(env),
    startGatewayProcess({
      ...env,
      GATEWAY_WORKERS: '1',
      MOCK_VENDORS: 'true',
      SHED_LOOP_DELAY_MS: String(SHED_MS),
    }),
  ]);
});

afterAll(async () => {
  gateway?.child.kill('SIGCONT');
  await gateway?.stop();
});

const models = (): Promise<Response> =>
  fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${org.api_key}` } });

/** A JSON chat call the mock answers after `latencyMs`. */
const slowCall = (latencyMs: number): Promise<Response> =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${org.api_key}` },
    body: JSON.stringify({
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: `hi mock:latency_ms=${latencyMs} mock:output_tokens=3` }],
    }),
  });

async function shedCount(): Promise<number> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  return Number(/^gw_requests_shed_total (\d+)/m.exec(text)?.[1]);
}

describe('a gateway whose event loop runs late', () => {
  it('refuses new requests at once while it is, serves health checks and what was in flight, then serves again', async () => {
    // Served while the loop keeps time (polled: a loaded machine may stall it a moment).
    const served = async (): Promise<number> => (await models()).status;
    await expect.poll(served, { timeout: 10_000 }).toBe(200);
    const shedBefore = await shedCount();
    const inFlight = slowCall(1_500);
    await sleep(300); // the call is read and waits on the mock
    gateway.child.kill('SIGSTOP');
    const arrivals = [models(), models(), slowCall(0)];
    const health = fetch(`${gateway.url}/healthz`);
    await sleep(SHED_MS * 3);
    gateway.child.kill('SIGCONT');

    for (const refused of await Promise.all(arrivals)) {
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('connection')).toBe('close');
      expect(await refused.json()).toEqual({
        error: { code: 'gw_unavailable', message: 'this gateway instance is overloaded; retry' },
      });
    }
    expect(await shedCount()).toBe(shedBefore + 3);
    expect((await health).status).toBe(200);
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(
      ((await answered.json()) as { choices: { finish_reason: string }[] }).choices[0]!
        .finish_reason,
    ).toBe('stop');

    await expect.poll(served, { timeout: 10_000 }).toBe(200);
  });
});
