// Redis going away and coming back empty: requests fail cleanly (503, nothing half-done) while
// it is down, and once it is back every counter is rebuilt from Postgres — the wallet balance
// continues exactly where the ledger says it is.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, uniquePrefix } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import {
  runCliJson,
  seed,
  startGatewayProcess,
  type SpawnedGateway,
  type SeededOrg,
} from './support/processes.js';
import { eventually, testDb } from './support/services.js';

const REDIS_PORT = 6390 + Math.floor(Math.random() * 500);
const prefix = uniquePrefix('resilience');
// REDIS_CLUSTER_NODES emptied: this file is about its own single Redis, whatever the run's.
const env = {
  ...baseEnv(prefix),
  REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
  REDIS_CLUSTER_NODES: '',
};
const redisDir = mkdtempSync(path.join(tmpdir(), 'gw-redis-'));
let redis: ChildProcess | undefined;
let gateway: SpawnedGateway;
let org: SeededOrg;
const db = testDb();

/** A private, throwaway Redis for this file only (the shared one is never stopped). */
async function startRedis(): Promise<void> {
  redis = spawn(
    'redis-server',
    [
      '--port',
      String(REDIS_PORT),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      redisDir,
    ],
    {
      stdio: 'ignore',
    },
  );
  await eventually(async () => {
    const probe = spawn('redis-cli', ['-p', String(REDIS_PORT), 'ping'], { stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => probe.on('exit', resolve));
    return code === 0 ? true : undefined;
  }, 10_000);
}

async function stopRedis(): Promise<void> {
  if (!redis || redis.exitCode !== null) return;
  const exited = new Promise((resolve) => redis!.once('exit', resolve));
  redis.kill('SIGKILL');
  await exited;
}

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hi' }],
};

beforeAll(async () => {
  await startRedis();
  gateway = await startGatewayProcess(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  await stopRedis();
  await db.end();
});

describe('when Redis goes away', () => {
  it('answers 503 gw_unavailable, then serves again once Redis is back, with balances rebuilt from Postgres', async () => {
    const first = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key));
    expect(first.status).toBe(200);
    // This Redis keeps nothing on disk: let the first record reach Postgres before killing it
    // (a production Redis runs with AOF, which keeps records not yet written).
    await eventually(async () => {
      const { rows } = await db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [
        first.headers.get('x-request-id'),
      ]);
      return rows[0];
    });
    const before = await runCliJson<{ balance: string }>(
      ['wallet', 'show', '--org-id', org.org_id],
      env,
    );

    await stopRedis();
    const down = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('gw_unavailable');
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);

    await startRedis(); // empty: every counter must come back from Postgres
    const back = await eventually(async () => {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chat,
        bearer(org.api_key),
      );
      return response.status === 200 ? response : undefined;
    }, 15_000);
    expect(back.status).toBe(200);
    // The ledger had the first request; the rebuilt wallet continues from it.
    const after = await eventually(async () => {
      const wallet = await runCliJson<{ balance: string; reserved: string }>(
        ['wallet', 'show', '--org-id', org.org_id],
        env,
      );
      return wallet.reserved === '0.000000000000' ? wallet : undefined;
    });
    // The request settled after the restart reaches the ledger too.
    const requestId = back.headers.get('x-request-id')!;
    const row = await eventually(async () => {
      const { rows } = await db.query('SELECT status FROM usage_records WHERE request_id = $1', [
        requestId,
      ]);
      return rows[0];
    }, 10_000);
    expect(row).toEqual({ status: 'completed' });
    const nano = (text: string) => BigInt(text.replace('.', '').slice(0, -3));
    const spentPerRequest = 1_000_000_000n * 100n - nano(before.balance);
    expect(nano(after.balance)).toBe(nano(before.balance) - spentPerRequest);
  });
});
