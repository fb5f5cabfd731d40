// Load shedding (decision 335): with SHED_LOOP_DELAY_MS set, a request that arrives while the
// event loop runs that late is answered 503 at once and its connection closed, health checks are
// served, requests already in flight go on, and new ones are served again once the loop keeps
// time. The gateway is a real process, stopped (SIGSTOP) to make its loop late: requests sent
// meanwhile, on new connections and on connections it had already accepted, wait in the kernel
// and are read after SIGCONT, over the turns that follow.
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';
import {
  metricsUrl,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, redis, prefix } = isolatedContext('load-shedding');
const keys = createRedisKeys(prefix);
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

/** The answers read on a connection until it closed (or 5 s passed: `closed` false). */
interface Answers {
  readonly statuses: number[];
  readonly heads: string[];
  readonly closed: boolean;
}

/** A connection the gateway has accepted; `send` writes raw requests and reads the answers. */
async function acceptedConnection(): Promise<{
  send: (requests: string) => Promise<Answers>;
  ask: (path: string, method?: string) => Promise<Answers>;
}> {
  const socket: Socket = connect(gateway.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const send = async (requests: string): Promise<Answers> => {
    socket.write(requests);
    // A shed answer closes the connection; any other would leave it open (read it anyway).
    const closed = await Promise.race([
      new Promise<boolean>((resolve) => socket.once('close', () => resolve(true))),
      sleep(5_000).then(() => false),
    ]);
    socket.destroy();
    const heads = received.split('\r\n\r\n').filter((part) => part.startsWith('HTTP/1.1 '));
    return { statuses: heads.map((head) => Number(head.slice(9, 12))), heads, closed };
  };
  const request = (method: string, path: string): string =>
    `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${org.api_key}\r\n\r\n`;
  return {
    send,
    ask: (path, method = 'GET') => send(request(method, path)),
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
    const [headConnection, pipelining] = await Promise.all([
      acceptedConnection(),
      acceptedConnection(),
    ]);
    // The call is read and waits on the mock: its hold is placed, which takes the loop several
    // turns (Redis round trips), in which it also accepts the connections opened before.
    const holds = keys.holdExpiries(keys.wallet(org.org_id));
    await eventually(async () => ((await redis.zcard(holds)) === 1 ? true : undefined));
    gateway.child.kill('SIGSTOP');
    const arrivals = [models(), models(), slowCall(0)];
    const onAccepted = accepted.map((connection) => connection.ask('/v1/models'));
    const head = headConnection.ask('/v1/models', 'HEAD');
    // Two requests in one write: the first is shed; the second, pipelined behind an answer
    // that closes the connection, must never be served.
    const pipelined = pipelining.send(
      [
        'GET /v1/models HTTP/1.1',
        'host: 127.0.0.1',
        `authorization: Bearer ${org.api_key}`,
        '',
        'GET /healthz HTTP/1.1',
        'host: 127.0.0.1',
        '',
        '',
      ].join('\r\n'),
    );
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
    for (const answers of await Promise.all(onAccepted)) {
      expect([answers.statuses, answers.closed]).toEqual([[503], true]);
    }
    // A shed HEAD too: its status and Connection: close, no body, and the connection closed.
    const headAnswers = await head;
    expect([headAnswers.statuses, headAnswers.closed]).toEqual([[503], true]);
    expect(headAnswers.heads[0]).toMatch(/\r\nconnection: close\r\n/i);
    expect(headAnswers.heads[0]).toMatch(/\r\nretry-after: 1\r\n/i);
    // Nothing is served behind the shed answer: uWS drops a connection whose next request
    // arrives before the answer is written, so neither is answered (the client retries both,
    // and neither was processed) and the connection closes.
    const pipelinedAnswers = await pipelined;
    expect([pipelinedAnswers.statuses, pipelinedAnswers.closed]).toEqual([[], true]);
    // The pipelined pair's first request was shed; the second never reached the gateway.
    expect(await shedCount()).toBe(shedBefore + 7);
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
