// Load shedding (decision 335): with SHED_LOOP_DELAY_MS set, a request that arrives while the
// event loop runs that late is answered 503 at once and its connection closed, health checks are
// served, requests already in flight go on, and new ones are served again once the loop keeps
// time. The gateway is a real process, stopped (SIGSTOP) to make its loop late: requests sent
// meanwhile, on new connections and on connections it had already accepted, wait in the kernel
// and are read after SIGCONT, over the turns that follow.
import { connect, type Socket } from 'node:net';
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

/** A connection the gateway has accepted; `ask` writes a GET and resolves with its status. */
async function acceptedConnection(): Promise<{ ask: (path: string) => Promise<number> }> {
  const socket: Socket = connect(gateway.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  return {
    ask: async (path) => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${org.api_key}\r\n\r\n`,
      );
      // A shed answer closes the connection; any other would leave it open (read it anyway).
      await Promise.race([new Promise((resolve) => socket.once('close', resolve)), sleep(5_000)]);
      socket.destroy();
      return Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
    },
  };
}

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
    const accepted = await Promise.all([acceptedConnection(), acceptedConnection()]);
    await sleep(300); // the call is read and waits on the mock; the connections are accepted
    gateway.child.kill('SIGSTOP');
    const arrivals = [models(), models(), slowCall(0)];
    const onAccepted = accepted.map((connection) => connection.ask('/v1/models'));
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
    // Shed answers close their connections (a kept-alive one would not close after a 200).
    expect(await Promise.all(onAccepted)).toEqual([503, 503]);
    expect(await shedCount()).toBe(shedBefore + 5);
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
