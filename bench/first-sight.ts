// npm run build && node dist/bench/first-sight.js [--users 1000] [--runs 3] [--rate 400]
//   [--pool 20]
// A month's start in one org, in-process on the real Redis and Postgres: `--users` product
// users seen for the first time reserve at once, so each one's period account (and credits)
// is rebuilt from the ledger, while `--rate` settles per second of other, known users go on in
// the same org and a usage writer moves them to Postgres (its 50 ms flush is what moves the
// stream under the rebuilds). Reports per run the time to the last reserve, each reserve's
// latency (p50, p99), how the rebuilds ended, the Postgres connections taken and the Redis
// commands the rebuilds sent (INFO commandstats: the shared Redis, so approximate), and checks
// that every new user's account is in Redis at 0. The gateway's pool (20) is the default.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { createDbPool } from '../src/db/pool.js';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { newRequestId } from '../src/ids.js';
import { monthlyPeriod } from '../src/periods.js';
import { connectRedis, quitRedis } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { UsageDeadLetters } from '../src/ledger/usage-dead-letters.js';
import { UsageStreamWriter } from '../src/ledger/usage-writer.js';
import { createLogger } from '../src/log.js';
import { GatewayMetrics } from '../src/metrics.js';
import { benchUsageRecord } from './bench-records.js';
import { median } from './measure.js';

const { values: flags } = parseArgs({
  options: {
    users: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    rate: { type: 'string', default: '400' },
    pool: { type: 'string', default: '20' },
  },
});
const userCount = Number(flags.users);
const runs = Number(flags.runs);
const settlesPerSecond = Number(flags.rate);

const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_bench';
await ensureDatabase(databaseUrl);
const db = createDbPool(databaseUrl, Number(flags.pool));
await migrate(db);
const target = { kind: 'single', url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } as const;
const redis = connectRedis(target, { maxRetriesPerRequest: 2 });
const writerRedis = connectRedis(target, { maxRetriesPerRequest: null });
const period = monthlyPeriod(new Date(), null);
const HOLD_NANO = 1_000_000n;

/** INFO commandstats: calls per command. */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1]!, Number(match[2]));
  }
  return calls;
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

interface RunResult {
  readonly wallMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

async function oneRun(run: number): Promise<RunResult> {
  const prefix = `bench-first-sight-${randomUUID().slice(0, 8)}:`;
  const keys = createRedisKeys(prefix);
  const scripts = defineScripts(redis);
  const outcomes = new Map<string, number>();
  let measurements = 0;
  const { budget } = createMoneyLayer({
    db,
    redis,
    keys,
    scripts,
    reservationTtlMs: 600_000,
    observeRebuilds: (kind, outcome, count) => {
      outcomes.set(`${kind}/${outcome}`, (outcomes.get(`${kind}/${outcome}`) ?? 0) + 1);
      measurements += count;
    },
  });
  const orgId = `org_first_sight_${randomUUID().slice(0, 8)}`;
  const accountsOf = (productUserId: string): RequestAccounts => ({
    orgId,
    appConnectionId: `conn_${orgId}`,
    orgCap: null,
    connectionCap: null,
    user: { productUserId, capNano: null, creditMode: 'track_only', period },
    walletPays: false,
    credentials: null,
  });
  const request = async (productUserId: string): Promise<void> => {
    const requestId = newRequestId();
    const accounts = accountsOf(productUserId);
    const record = (costNano: bigint) =>
      benchUsageRecord({
        requestId,
        orgId,
        appConnectionId: accounts.appConnectionId,
        productUserId,
        inputTokens: 10,
        outputTokens: 10,
        costNano,
        heldNano: HOLD_NANO,
      });
    const held = await budget.reserve({
      requestId,
      accounts,
      amountNano: HOLD_NANO,
      lostRecord: record(0n),
    });
    if (held.kind !== 'held') throw new Error(`first-sight: reserve said ${held.kind}`);
    await budget.settle(record(2000n), accounts);
  };

  // Known users: their accounts are built before the burst, then they settle at `--rate`.
  const known = Array.from({ length: 20 }, (_, index) => `pu_known_${orgId}_${index}`);
  await Promise.all(known.map((user) => request(user)));
  const writer = new UsageStreamWriter(
    writerRedis,
    keys,
    new PostgresUsageSink(db),
    new UsageDeadLetters(db),
    createLogger('silent'),
    new GatewayMetrics(false),
    {
      consumerName: `first-sight-${run}`,
      batchMaxRows: 500,
      flushIntervalMs: 50,
      claimIdleMs: 30_000,
    },
  );
  writer.start();
  let background = true;
  const backgroundDone = (async () => {
    let next = 0;
    const started = performance.now();
    let sent = 0;
    const pending = new Set<Promise<void>>();
    while (background) {
      const due = Math.floor(((performance.now() - started) * settlesPerSecond) / 1000);
      for (; sent < due; sent += 1) {
        const done = request(known[next++ % known.length]!).finally(() => pending.delete(done));
        pending.add(done);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(pending);
  })();
  await new Promise((resolve) => setTimeout(resolve, 500));

  const connects = { count: 0 };
  const countConnect = (): void => {
    connects.count += 1;
  };
  db.on('acquire', countConnect);
  const before = await commandCalls();
  const users = Array.from({ length: userCount }, (_, index) => `pu_new_${orgId}_${index}`);
  const latencies: number[] = [];
  const burstStart = performance.now();
  await Promise.all(
    users.map(async (user) => {
      const start = performance.now();
      await request(user);
      latencies.push(performance.now() - start);
    }),
  );
  const wallMs = performance.now() - burstStart;
  const after = await commandCalls();
  db.off('acquire', countConnect);
  background = false;
  await backgroundDone;
  await writer.stop();

  // Each new user's account is there, holding what its one request spent.
  const spent = await Promise.all(
    users.map((user) => redis.hget(keys.userSpend(orgId, user, period.key), 'spent')),
  );
  const wrong = spent.filter((value) => value !== '2000').length;
  if (wrong > 0) console.log('sample', spent.slice(0, 5));
  const sent = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
  latencies.sort((a, b) => a - b);
  const result = { wallMs, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
  console.log(
    JSON.stringify({
      run,
      users: userCount,
      wall_ms: Math.round(wallMs),
      reserve_p50_ms: Math.round(result.p50Ms),
      reserve_p99_ms: Math.round(result.p99Ms),
      rebuilds: Object.fromEntries(outcomes),
      measurements,
      pool_acquires: connects.count,
      redis_calls: {
        xrange: sent('xrange'),
        hgetall: sent('hgetall'),
        xinfo: sent('xinfo|stream') || sent('xinfo'),
        exec: sent('exec'),
      },
      accounts_wrong: wrong,
    }),
  );
  const leftovers = await redis.keys(`${prefix}*`);
  if (leftovers.length > 0) await redis.del(...leftovers);
  return result;
}

const results: RunResult[] = [];
for (let run = 0; run < runs; run += 1) results.push(await oneRun(run));
console.log(
  JSON.stringify({
    median_wall_ms: Math.round(median(results.map((result) => result.wallMs))),
    median_reserve_p50_ms: Math.round(median(results.map((result) => result.p50Ms))),
    median_reserve_p99_ms: Math.round(median(results.map((result) => result.p99Ms))),
  }),
);
await quitRedis(redis);
await quitRedis(writerRedis);
await db.end();
