// Redis restarted under load. With AOF persistence (the production setting, appendfsync
// always): requests during the restart fail closed with 503 gw_unavailable (never served
// unmetered), no settled record is lost, and afterwards the live accounts equal the ledger.
// Without persistence (Redis comes back empty): the same clean 503s; the usage records settled
// in Redis and not yet written to Postgres are lost (counted here, never more than the writer's
// backlog), and every account is rebuilt from the ledger, exactly (docs/operations.md says what
// else an empty Redis loses). A private Redis for each (the shared one is never stopped).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectRedis, quitRedis } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { baseEnv, uniquePrefix } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { eventually, testDb } from './support/services.js';

const db = testDb();
afterAll(() => db.end());

/** A private Redis on its own port and directory, killed with SIGKILL (a crash). */
function privateRedis(persistence: 'aof' | 'none') {
  const port = 7400 + Math.floor(Math.random() * 500);
  const dir = mkdtempSync(path.join(tmpdir(), 'gw-redis-restart-'));
  let child: ChildProcess | undefined;
  const persistenceArgs =
    persistence === 'aof'
      ? ['--appendonly', 'yes', '--appendfsync', 'always']
      : ['--appendonly', 'no'];
  return {
    url: `redis://127.0.0.1:${port}`,
    async start(): Promise<void> {
      child = spawn(
        'redis-server',
        [
          ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''],
          ...persistenceArgs,
          ...['--maxmemory-policy', 'noeviction'],
        ],
        { stdio: 'ignore' },
      );
      await eventually(async () => {
        const probe = spawn('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' });
        const code = await new Promise<number | null>((resolve) => probe.on('exit', resolve));
        return code === 0 ? true : undefined;
      }, 10_000);
    },
    async kill(): Promise<void> {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL'); // a crash, not a clean shutdown: only the AOF (if any) survives
      await exited;
    },
    remove(): void {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface RestartRun {
  readonly env: Record<string, string>;
  readonly org: SeededOrg;
  readonly served: string[];
  readonly refusals: Map<string, number>;
  /** How many were served before the crash (the batch in flight then: up to 4 more). */
  readonly servedAtKill: number;
  /** The served requests whose records are in Postgres once the writer has caught up. */
  readonly recorded: Set<string>;
}

/**
 * Requests four at a time through one gateway while its Redis is killed and restarted; returns
 * what was served and refused, and which served requests have their row in Postgres.
 */
async function restartUnderLoad(
  persistence: 'aof' | 'none',
  cleanups: Array<() => Promise<void> | void>,
): Promise<RestartRun> {
  const redis = privateRedis(persistence);
  const prefix = uniquePrefix(`redis-${persistence}`);
  const env = {
    ...baseEnv(prefix),
    REDIS_URL: redis.url,
    REDIS_CLUSTER_NODES: '', // this file's own single Redis, whatever the run's
  };
  await redis.start();
  // The writer runs every 2 s: records wait in Redis that long, so a crash without
  // persistence has records to lose. A batch Redis delivered (and logged in its AOF) whose
  // answer the crash cut off stays pending for the writer until a claim round takes it back,
  // once idle USAGE_CLAIM_IDLE_MS: 3 s here, where the default 30 s outlasts the wait below.
  const gateway: SpawnedGateway = await startGatewayProcess({
    ...env,
    USAGE_FLUSH_INTERVAL_MS: '2000',
    USAGE_CLAIM_IDLE_MS: '3000',
  });
  cleanups.push(async () => {
    await gateway.stop('SIGKILL');
    await redis.kill();
    redis.remove();
  });
  const org = await seed(env);
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
              messages: [{ role: 'user', content: `restart ${(index += 1)}` }],
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
  const servedAtKill = served.length;
  await redis.kill();
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await redis.start();
  const servedAtRestart = served.length;
  await eventually(async () => (served.length >= servedAtRestart + 20 ? true : undefined), 20_000);
  running = false;
  await load;
  // Let the writer catch up with everything Redis still has: until every served request has
  // its row, or nothing of them is left to write. Every served request was settled before it
  // was answered, into the org's usage stream or, while Redis was away, into the settle spool
  // (replayed into the stream once Redis is back). The spool is looked at first: once it is
  // empty nothing enters the stream any more, and the writer deletes an entry once its row is
  // committed, so an empty stream after it leaves nothing to come.
  const recordedIds = async (): Promise<Set<string>> => {
    const { rows } = await db.query<{ request_id: string }>(
      'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
      [served],
    );
    return new Set(rows.map((row) => row.request_id));
  };
  const usageStream = createRedisKeys(prefix).usageStream(org.org_id);
  const direct = connectRedis({ kind: 'single', url: redis.url }, { maxRetriesPerRequest: 2 });
  const spooled = async (): Promise<number> => {
    const scrape = await (await fetch(metricsUrl(gateway))).text();
    const value = /^gw_settle_spool_pending (\d+)$/m.exec(scrape)?.[1];
    if (value === undefined) throw new Error('no gw_settle_spool_pending in the scrape');
    return Number(value);
  };
  try {
    await eventually(async () => {
      if ((await recordedIds()).size === served.length) return true;
      // a scrape that failed says nothing: asked again
      const waiting = await spooled().catch(() => undefined);
      return waiting === 0 && (await direct.xlen(usageStream)) === 0 ? true : undefined;
    }, 30_000);
  } finally {
    await quitRedis(direct);
  }
  const recorded = await recordedIds();
  return { env, org, served, refusals, servedAtKill, recorded };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const totalRefused = (run: RestartRun): number =>
  [...run.refusals.values()].reduce((sum, count) => sum + count, 0);

describe('Redis killed and restarted under load', () => {
  it('with AOF: fails closed meanwhile, loses no settled record, and leaves every account exact', async () => {
    const run = await restartUnderLoad('aof', cleanups);
    // During the restart: only clean 503s (nothing answered 200 without being metered).
    expect([...run.refusals.keys()].every((key) => key === '503 gw_unavailable')).toBe(true);
    // Every request answered 200 has its record in Postgres: none lost to the crash.
    expect(run.recorded.size).toBe(run.served.length);
    // And the live wallet, caps and user spends equal the ledger.
    const report = await runCliJson<{ consistent: number; drifted: number }>(
      ['reconcile', '--org-id', run.org.org_id],
      run.env,
    );
    expect(report).toMatchObject({ consistent: 1, drifted: 0 });
    console.info(
      `redis kill -9 + restart with AOF: ${run.served.length} requests served, ` +
        `${totalRefused(run)} refused 503 meanwhile, ` +
        `${run.recorded.size}/${run.served.length} records in Postgres, 0 lost, accounts exact`,
    );
  }, 90_000);

  it('without persistence: fails closed, loses only the unwritten records, and rebuilds every account from the ledger', async () => {
    const run = await restartUnderLoad('none', cleanups);
    expect([...run.refusals.keys()].every((key) => key === '503 gw_unavailable')).toBe(true);
    // What is lost: the records settled in Redis and not yet in Postgres at the crash (at most
    // the writer's backlog: here ~2 s of traffic). Every row in Postgres is a served request's.
    const lost = run.served.filter((id) => !run.recorded.has(id));
    expect(run.recorded.size + lost.length).toBe(run.served.length);
    // Nothing settled after the restart is lost: only requests answered before the crash (or
    // in the batch of 4 in flight at it) are missing.
    const lastLost = Math.max(-1, ...lost.map((id) => run.served.indexOf(id)));
    expect(lastLost).toBeLessThan(run.servedAtKill + 4);
    // The accounts came back from the ledger: the wallet is exactly top-ups − recorded usage,
    // and reconcile finds no drift. A lost record is charged nowhere (not a double charge).
    const { rows } = await db.query<{ topups: string; used: string }>(
      `SELECT (SELECT COALESCE(sum(amount), 0)::text FROM wallet_transactions WHERE org_id = $1) AS topups,
              (SELECT COALESCE(sum(wallet_cost), 0)::text FROM usage_records WHERE org_id = $1) AS used`,
      [run.org.org_id],
    );
    const wallet = await eventually(async () => {
      const shown = await runCliJson<{ balance: string; reserved: string }>(
        ['wallet', 'show', '--org-id', run.org.org_id],
        run.env,
      );
      return shown.reserved === '0.000000000000' ? shown : undefined;
    });
    const nano = (text: string): bigint => {
      const [whole, fraction = ''] = text.split('.');
      return BigInt(whole!) * 10n ** 12n + BigInt(fraction.padEnd(12, '0'));
    };
    expect(nano(wallet.balance)).toBe(nano(rows[0]!.topups) - nano(rows[0]!.used));
    const report = await runCliJson<{ consistent: number; drifted: number }>(
      ['reconcile', '--org-id', run.org.org_id],
      run.env,
    );
    expect(report).toMatchObject({ consistent: 1, drifted: 0 });
    console.info(
      `redis kill -9 + restart without persistence: ${run.served.length} requests served, ` +
        `${totalRefused(run)} refused 503 meanwhile, ${run.recorded.size} records in Postgres, ` +
        `${lost.length} lost (settled in Redis, not yet written), accounts rebuilt exactly`,
    );
  }, 90_000);
});
