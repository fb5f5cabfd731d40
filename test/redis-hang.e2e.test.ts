// A Redis that hangs (SIGSTOP: a stopped host, a partition, a master gone without a reset)
// must not hang requests. Each wait of a request on Redis is bounded by REDIS_TIMEOUT_MS: a
// request answers 503 gw_unavailable, and what its reserve held once Redis runs it is released
// (no hold, no draft, no usage row, nothing charged, also after another instance has looked
// for lost requests). A settle that hangs after the vendor answered goes to the settle spool:
// the client gets its answer, and once Redis resumes the request is recorded and charged
// exactly once. A connection cut off without a reset (a partition, a failed-over master
// that vanished) is replaced: requests answer 503 meanwhile, then are served and recorded
// again. A private redis-server behind a relay that can strand its connections (the shared
// Redis is never stopped).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { baseEnv, uniquePrefix } from './support/env.js';
import { bearer } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { startFreezableRelay, type FreezableRelay } from './support/freezable-relay.js';
import { eventually, testDb } from './support/services.js';
import { spoolDirectory, spoolFiles } from './support/settle-spool.js';

const REDIS_TIMEOUT_MS = 1_000;
const port = 16_500 + Math.floor(Math.random() * 400);
const prefix = uniquePrefix('redis-hang');
const keys = createRedisKeys(prefix);
const spoolDir = spoolDirectory(prefix);
const redisDir = mkdtempSync(path.join(tmpdir(), 'gw-redis-hang-'));
const db = testDb();
let redisServer: ChildProcess;
let direct: Redis;
let relay: FreezableRelay;
let vendor: Server;
let env: Record<string, string>;
let gateway: GatewayProcess | undefined;
let org: SeededOrg;
/** Set by a test: the vendor stops Redis when the call arrives, then answers. */
let stopRedisOnVendorCall = false;
let stopped = false;

function stopRedis(): void {
  process.kill(redisServer.pid!, 'SIGSTOP');
  stopped = true;
}
function resumeRedis(): void {
  if (stopped) process.kill(redisServer.pid!, 'SIGCONT');
  stopped = false;
}

/** vendor_b's chat completions: 1,000 tokens in, 500 out. */
function startVendor(): Promise<string> {
  vendor = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (stopRedisOnVendorCall) stopRedis();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-hang',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    vendor.listen(0, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(vendor.address() as { port: number }).port}`);
    }),
  );
}

interface Answer {
  readonly status: number;
  readonly requestId: string;
  readonly code: string | undefined;
  readonly content: string | undefined;
  readonly waitedMs: number;
}

/** One chat completion; gives up after 15 s (before, a hung Redis held it forever). */
async function chat(label: string): Promise<Answer> {
  const startedAt = Date.now();
  const response = await fetch(`${gateway!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(org.api_key) },
    body: JSON.stringify({
      model: 'vendor_b/gpt-4o-mini',
      max_tokens: 600,
      messages: [{ role: 'user', content: label }],
    }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await response.json()) as {
    error?: { code: string };
    choices?: Array<{ message: { content: string } }>;
  };
  return {
    status: response.status,
    requestId: response.headers.get('x-request-id')!,
    code: body.error?.code,
    content: body.choices?.[0]?.message.content,
    waitedMs: Date.now() - startedAt,
  };
}

async function walletState(): Promise<{ balance: bigint; reserved: bigint; holds: number }> {
  const account = keys.wallet(org.org_id);
  const [balance, reserved] = await direct.hmget(account, 'balance', 'reserved');
  return {
    balance: BigInt(balance ?? '0'),
    reserved: BigInt(reserved ?? '0'),
    holds: await direct.zcard(keys.holdExpiries(account)),
  };
}

async function usageRows(
  requestId: string,
): Promise<Array<{ status: string; wallet_cost: string }>> {
  const { rows } = await db.query<{ status: string; wallet_cost: string }>(
    `SELECT status, (wallet_cost * 1000000000)::bigint::text AS wallet_cost
       FROM usage_records WHERE request_id = $1`,
    [requestId],
  );
  return rows;
}

function gatewayEnv(): Record<string, string> {
  return {
    ...env,
    METRICS_PORT: '0',
    REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT_MS),
    // Short, so another instance's search for lost requests runs within the test.
    RESERVATION_TTL_MS: '2000',
    INSTANCE_DEAD_AFTER_MS: '1000',
    USAGE_FLUSH_INTERVAL_MS: '200',
    SPOOL_DIR: spoolDir,
  };
}

beforeAll(async () => {
  redisServer = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', cwd: redisDir },
  );
  // Never left behind, stopped or not, even when a hook below times out.
  process.once('exit', () => {
    if (redisServer.exitCode === null) {
      process.kill(redisServer.pid!, 'SIGCONT');
      redisServer.kill('SIGKILL');
    }
  });
  direct = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
  direct.on('error', () => undefined); // until the server listens
  await eventually(async () => ((await direct.ping()) === 'PONG' ? true : undefined), 10_000);
  const vendorUrl = await startVendor();
  relay = await startFreezableRelay({ host: '127.0.0.1', port });
  env = {
    ...baseEnv(prefix),
    REDIS_URL: `redis://127.0.0.1:${relay.port}`,
    REDIS_CLUSTER_NODES: '', // this file's own single Redis, whatever the run's
    VENDOR_B_BASE_URL: vendorUrl,
    VENDOR_B_API_KEY: 'test-vendor-key',
  };
  org = await seed(env);
  gateway = await startGateway(gatewayEnv());
  // Warm: the key and the org's stream are known, so a request's first wait on Redis is its
  // reserve.
  expect((await chat('warm')).status).toBe(200);
}, 60_000);

afterAll(async () => {
  resumeRedis();
  await gateway?.stop();
  direct?.disconnect();
  await relay?.close();
  await new Promise((resolve) => vendor?.close(resolve));
  redisServer?.kill('SIGKILL');
  await db.end();
  rmSync(spoolDir, { recursive: true, force: true });
  rmSync(redisDir, { recursive: true, force: true });
});

describe('a Redis that hangs', () => {
  it('answers a request 503 gw_unavailable within REDIS_TIMEOUT_MS, and what its reserve held once Redis resumed is released, never recorded nor charged', async () => {
    const before = await walletState();
    stopRedis();
    let refused: Answer;
    try {
      refused = await chat('while Redis hangs');
    } finally {
      resumeRedis();
    }
    expect({ status: refused.status, code: refused.code }).toEqual({
      status: 503,
      code: 'gw_unavailable',
    });
    expect(refused.waitedMs).toBeGreaterThanOrEqual(REDIS_TIMEOUT_MS - 50);
    expect(refused.waitedMs).toBeLessThan(REDIS_TIMEOUT_MS + 2_000);
    expect(gateway!.output()).toContain('route answered 503: a dependency is unavailable');

    // The reserve ran once Redis resumed, and the release after it, on the same connection.
    // A request served now queues behind both.
    const served = await chat('after the hang');
    expect(served.status).toBe(200);
    const release = await eventually(async () =>
      gateway!
        .output()
        .split('\n')
        .find(
          (line) =>
            line.includes('released the holds of a reserve given up on') &&
            line.includes(refused.requestId),
        ),
    );
    expect(JSON.parse(release)).toMatchObject({ requestId: refused.requestId, released: 1 });
    expect(await direct.hexists(keys.inFlight(org.org_id), refused.requestId)).toBe(0);
    const after = await walletState();
    expect({ reserved: after.reserved, holds: after.holds }).toEqual({ reserved: 0n, holds: 0 });
    const [servedRow] = await eventually(async () => {
      const rows = await usageRows(served.requestId);
      return rows.length > 0 ? rows : undefined;
    });

    // This instance goes; another one, finding it silent, looks for its lost requests once
    // their holds have lapsed: there is nothing of the refused request to record.
    const [instance] = await direct.zrange(keys.instances(), 0, -1);
    await gateway!.stop();
    await direct.zadd(keys.instances(), 1, instance!); // silent since long ago
    gateway = await startGateway(gatewayEnv());
    await eventually(
      async () => ((await direct.zscore(keys.instances(), instance!)) === null ? true : undefined),
      15_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the writer's next batches
    expect(await usageRows(refused.requestId)).toEqual([]);
    expect(await direct.hexists(keys.inFlight(org.org_id), refused.requestId)).toBe(0);
    // Nothing charged for it: the wallet paid the request served after the hang, no more.
    expect(await walletState()).toEqual({
      balance: before.balance - BigInt(servedRow!.wallet_cost),
      reserved: 0n,
      holds: 0,
    });
  }, 60_000);

  it('answers a request whose settle hangs after the vendor answered, and charges it once when Redis resumes', async () => {
    const before = await walletState();
    stopRedisOnVendorCall = true;
    let answered: Answer;
    try {
      answered = await chat('settle hangs');
    } finally {
      stopRedisOnVendorCall = false;
      resumeRedis();
    }
    // The vendor's answer, after the settle's bound: the settle waits in the spool.
    expect({ status: answered.status, content: answered.content }).toEqual({
      status: 200,
      content: 'hello',
    });
    // Spooled at the first time-out: a retry would only queue behind it on the same connection.
    expect(answered.waitedMs).toBeGreaterThanOrEqual(REDIS_TIMEOUT_MS - 50);
    expect(answered.waitedMs).toBeLessThan(REDIS_TIMEOUT_MS * 2);
    expect(spoolFiles(spoolDir).length).toBe(1);

    // The settle given up on runs now, and the spool's replay finds its record: one row, one
    // charge, no hold, the spool empty.
    const [row] = await eventually(async () => {
      const rows = await usageRows(answered.requestId);
      return rows.length > 0 ? rows : undefined;
    }, 15_000);
    expect(row!.status).toBe('completed');
    const cost = BigInt(row!.wallet_cost);
    expect(cost).toBeGreaterThan(0n);
    await eventually(async () => (spoolFiles(spoolDir).length === 0 ? true : undefined), 15_000);
    expect(await usageRows(answered.requestId)).toHaveLength(1);
    const after = await walletState();
    expect(after).toEqual({ balance: before.balance - cost, reserved: 0n, holds: 0 });
    expect(await direct.hexists(keys.inFlight(org.org_id), answered.requestId)).toBe(0);
  }, 60_000);
  it('replaces a connection cut off without a reset: requests answer 503 meanwhile, then are served and recorded again', async () => {
    const before = await walletState();
    // Every connection open now (the gateway's, its writer thread's, its subscriber's) goes
    // silent for good, as after a failover that left no reset behind; new ones go through.
    relay.strandOpen();
    const refused = await chat('on a stranded connection');
    expect({ status: refused.status, code: refused.code }).toEqual({
      status: 503,
      code: 'gw_unavailable',
    });
    expect(refused.waitedMs).toBeLessThan(REDIS_TIMEOUT_MS + 2_000);
    // Within twice the bound the connection is replaced and requests are served again.
    const served = await eventually(
      async () => {
        const answer = await chat('after the cut');
        return answer.status === 200 ? answer : undefined;
      },
      20_000,
      200,
    );
    expect(gateway!.output()).toContain(
      'redis connection silent with commands waiting: reconnecting',
    );
    // The writer thread's connection too: the served request reaches Postgres.
    const [row] = await eventually(async () => {
      const rows = await usageRows(served.requestId);
      return rows.length > 0 ? rows : undefined;
    }, 30_000);
    // The refused request's reserve, sent again on the new connection with its release after
    // it, holds nothing and is never recorded.
    expect(await usageRows(refused.requestId)).toEqual([]);
    expect(await direct.hexists(keys.inFlight(org.org_id), refused.requestId)).toBe(0);
    expect(await walletState()).toEqual({
      balance: before.balance - BigInt(row!.wallet_cost),
      reserved: 0n,
      holds: 0,
    });
  }, 60_000);
});
