// GATEWAY_WORKERS: several gateway processes accept on one port; the kernel spreads new
// connections over them. Every request is charged and recorded once whichever worker serves
// it, /metrics (served by the primary) sums the workers, a worker that dies is replaced, and
// SIGTERM drains every worker's streams (cutting and settling what outlasts the grace) before
// the primary exits 0.
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { startClosingFront, type ClosingFront } from './support/closing-vendor.js';
import { isolatedContext } from './support/context.js';
import { vendorsAt } from './support/env.js';
import { bearer, postSse } from './support/http.js';
import {
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { eventually, freePort } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('workers');
const keys = createRedisKeys(prefix);
let org: SeededOrg;
let gateway: SpawnedGateway;
let metricsPort: number;
let vendor: RunningMockVendors;
/** The vendors' front: holds a request marked `front:hold=<name>` until the test releases it. */
let front: ClosingFront;

/** One chat completion on a connection of its own, so the kernel may pick any worker. */
function chatOnNewConnection(
  port: number,
  apiKey: string,
  content: string,
): Promise<{ status: number; requestId: string }> {
  const body = JSON.stringify({
    model: 'vendor_b/gpt-4o-mini',
    messages: [{ role: 'user', content }],
  });
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...bearer(apiKey),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            requestId: String(response.headers['x-request-id']),
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The pids that logged a served request for the chat route. */
function servingPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"request"') || !line.includes('/v1/chat/completions')) continue;
    const pid = /"pid":(\d+)/.exec(line);
    if (pid) pids.add(Number(pid[1]));
  }
  return pids;
}

beforeAll(async () => {
  org = await seed(env);
  metricsPort = await freePort();
  // Streams are paced (50 tokens a second) and the drain is short: a long stream (20 s)
  // outlasts it; the short ones, held by the front until the drain has begun, end within it
  // however loaded the machine.
  vendor = await startMockVendors({ port: 0, tokensPerSecond: 50 });
  front = await startClosingFront({ mode: 'pass', upstreamPort: vendor.port });
  gateway = await startGatewayProcess({
    ...env,
    PORT: String(await freePort()),
    GATEWAY_WORKERS: '2',
    METRICS_PORT: String(metricsPort),
    REQUEST_LOG_SAMPLE_RATE: '1',
    ...vendorsAt(front.url),
    SHUTDOWN_GRACE_MS: '3000',
  });
  await eventually(
    async () => (gateway.output().includes('gw workers listening') ? true : undefined),
    20_000,
  );
});

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  await front?.stop();
  await vendor?.close();
});

describe('GATEWAY_WORKERS=2 on one port', () => {
  it('spreads connections over both workers and charges and records every request once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_unused, index) =>
        chatOnNewConnection(gateway.port, org.api_key, `worker spread ${index}`),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(200));
    // Each worker logs the requests it served (its lines may reach the pipe a little later).
    await eventually(
      async () => (servingPids(gateway.output()).size === 2 ? true : undefined),
      10_000,
    );

    const requestIds = answers.map((answer) => answer.requestId);
    const recorded = await eventually(async () => {
      const { rows } = await db.query<{ request_id: string }>(
        'SELECT request_id FROM usage_records WHERE request_id = ANY($1::uuid[])',
        [requestIds],
      );
      return rows.length >= 40 ? rows : undefined;
    }, 15_000);
    // Exactly one record per request, whichever worker served it.
    expect(new Set(recorded.map((row) => row.request_id)).size).toBe(40);
    expect(recorded).toHaveLength(40);

    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.headers.get('x-content-type-options')).toBe('nosniff');
    const metrics = await scraped.text();
    const served =
      /gw_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} (\d+)/.exec(metrics);
    expect(Number(served?.[1])).toBe(40);
  });

  it('replaces a worker that dies, and keeps serving meanwhile', async () => {
    const listenings = (): number => gateway.output().split('"msg":"gw listening"').length - 1;
    expect(listenings()).toBe(2);
    const [victim] = [...servingPids(gateway.output())];
    process.kill(victim!, 'SIGKILL');
    // The survivor serves while the replacement starts. (A connection the kernel had already
    // queued on the dead worker's socket is reset: a client retries it.)
    const meanwhile = await eventually(
      () =>
        chatOnNewConnection(gateway.port, org.api_key, 'during the restart').then(
          (answer) => (answer.status === 200 ? answer : undefined),
          () => undefined,
        ),
      10_000,
    );
    expect(meanwhile.status).toBe(200);
    await eventually(async () => (listenings() === 3 ? true : undefined), 20_000);
    expect(gateway.output()).toContain('a gateway worker died: starting another');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_unused, index) =>
        chatOnNewConnection(gateway.port, org.api_key, `after ${index}`),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
  });

  it('on SIGTERM every worker finishes its stream, then the primary exits 0', async () => {
    const streams = Array.from({ length: 4 }, (_unused, index) =>
      postSse(
        `${gateway.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          stream: true,
          messages: [
            {
              role: 'user',
              content: `drain ${index} front:hold=drain-${index} mock:output_tokens=3`,
            },
          ],
        },
        bearer(org.api_key),
      ),
    );
    // 20 s of output: cut when the grace ends, and settled as partial.
    const long = postSse(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'drain long mock:output_tokens=1000' }],
      },
      bearer(org.api_key),
    );
    // SIGTERM once all five are admitted (their holds placed, the short ones waiting for their
    // vendor), not after a guess at how long a loaded machine takes to get them there; the
    // short ones answered once both workers drain
    const holds = keys.holdExpiries(keys.wallet(org.org_id));
    await eventually(async () => ((await redis.zcard(holds)) === 5 ? true : undefined));
    const exited = gateway.stop('SIGTERM');
    await eventually(async () =>
      gateway.output().split('"msg":"shutting down"').length - 1 === 2 ? true : undefined,
    );
    for (let index = 0; index < 4; index += 1) front.release(`drain-${index}`);
    const answers = await Promise.all(streams);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.data.at(-1)).toBe('[DONE]');
    }
    const cut = await long;
    expect(JSON.parse(cut.data.at(-1)!)).toMatchObject({ error: { code: 'gw_unavailable' } });
    expect(await exited).toBe(0);
    const { rows: cutRows } = await db.query(
      'SELECT status, end_reason FROM usage_records WHERE request_id = $1',
      [cut.headers.get('x-request-id')],
    );
    expect(cutRows).toEqual([{ status: 'incomplete', end_reason: 'gateway_shutdown' }]);
    const ids = answers.map((answer) => answer.headers.get('x-request-id'));
    const { rows } = await db.query(
      'SELECT status FROM usage_records WHERE request_id = ANY($1::uuid[])',
      [ids],
    );
    expect(rows.map((row: { status: string }) => row.status)).toEqual(Array(4).fill('completed'));
  });
});

describe('a worker that cannot start', () => {
  it('stops the primary with exit 1 instead of restarting it forever', async () => {
    const squatter = createServer(); // no SO_REUSEPORT: the workers cannot share its port
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const { port } = squatter.address() as AddressInfo;
    try {
      await expect(
        startGatewayProcess({
          ...env,
          PORT: String(port),
          GATEWAY_WORKERS: '2',
          METRICS_ENABLED: 'false',
          // the primary does not check the port first: the workers are the ones that fail
          LISTEN_REUSE_PORT: 'true',
        }),
      ).rejects.toThrow(
        /exited with 1 before listening[\s\S]*\(HOST:PORT\)[\s\S]*a gateway worker failed to start/,
      );
    } finally {
      squatter.close();
    }
  }, 90_000);
});
