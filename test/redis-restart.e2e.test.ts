// Redis restarted under load, with AOF persistence (the production setting, appendfsync
// always): requests during the restart fail closed with 503 gw_unavailable (never served
// unmetered), no settled record is lost, and afterwards the live accounts equal the ledger.
// A private Redis for this file only (the shared one is never stopped).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, uniquePrefix } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import {
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { eventually, testDb } from './support/services.js';

const REDIS_PORT = 7400 + Math.floor(Math.random() * 500);
const env = {
  ...baseEnv(uniquePrefix('redisaof')),
  REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}`,
  REDIS_CLUSTER_NODES: '', // this file's own single Redis, whatever the run's
};
const redisDir = mkdtempSync(path.join(tmpdir(), 'gw-redis-aof-'));
const db = testDb();
let redis: ChildProcess | undefined;
let gateway: SpawnedGateway;
let org: SeededOrg;

async function startRedis(): Promise<void> {
  redis = spawn(
    'redis-server',
    [
      ...['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--dir', redisDir],
      ...['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
      ...['--maxmemory-policy', 'noeviction'],
    ],
    { stdio: 'ignore' },
  );
  await eventually(async () => {
    const probe = spawn('redis-cli', ['-p', String(REDIS_PORT), 'ping'], { stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => probe.on('exit', resolve));
    return code === 0 ? true : undefined;
  }, 10_000);
}

async function killRedis(): Promise<void> {
  if (!redis || redis.exitCode !== null) return;
  const exited = new Promise((resolve) => redis!.once('exit', resolve));
  redis.kill('SIGKILL'); // a crash, not a clean shutdown: only the AOF survives
  await exited;
}

beforeAll(async () => {
  await startRedis();
  gateway = await startGatewayProcess({ ...env, USAGE_FLUSH_INTERVAL_MS: '2000' });
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  await killRedis();
  rmSync(redisDir, { recursive: true, force: true });
  await db.end();
});

describe('Redis killed and restarted under load, with AOF', () => {
  it('fails closed meanwhile, loses no settled record, and leaves every account exact', async () => {
    const served: string[] = [];
    const refusals = new Map<string, number>();
    let running = true;
    const load = (async () => {
      let index = 0;
      while (running) {
        const answers = await Promise.all(
          Array.from({ length: 4 }, () =>
            postJson<{ error?: { code: string } }>(
              `${gateway.url}/v1/chat/completions`,
              {
                model: 'vendor_b/gpt-4o-mini',
                max_tokens: 8,
                messages: [{ role: 'user', content: `aof ${(index += 1)}` }],
                user: `user-${index % 5}`,
              },
              bearer(org.api_key),
            ),
          ),
        );
        for (const answer of answers) {
          if (answer.status === 200) served.push(answer.headers.get('x-request-id')!);
          else {
            const key = `${answer.status} ${answer.body.error?.code}`;
            refusals.set(key, (refusals.get(key) ?? 0) + 1);
          }
        }
      }
    })();
    await eventually(async () => (served.length >= 20 ? true : undefined), 15_000);
    await killRedis();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await startRedis();
    const servedAtRestart = served.length;
    await eventually(
      async () => (served.length >= servedAtRestart + 20 ? true : undefined),
      20_000,
    );
    running = false;
    await load;

    // During the restart: only clean 503s (nothing answered 200 without being metered).
    expect([...refusals.keys()].every((key) => key === '503 gw_unavailable')).toBe(true);
    // Every request answered 200 has its record in Postgres: none lost to the crash.
    const rows = await eventually(async () => {
      const { rows: found } = await db.query<{ request_id: string }>(
        'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
        [served],
      );
      return found.length === served.length ? found : undefined;
    }, 20_000);
    expect(new Set(rows.map((row) => row.request_id)).size).toBe(served.length);
    // And the live wallet, caps and user spends equal the ledger.
    const report = await runCliJson<{ consistent: number; drifted: number }>(
      ['reconcile', '--org-id', org.org_id],
      env,
    );
    expect(report).toMatchObject({ consistent: 1, drifted: 0 });
    console.info(
      `redis kill -9 + restart with AOF: ${served.length} requests served, ` +
        `${[...refusals.values()].reduce((a, b) => a + b, 0)} refused 503 meanwhile, ` +
        `${rows.length}/${served.length} records in Postgres, 0 lost, accounts exact`,
    );
  }, 90_000);
});
