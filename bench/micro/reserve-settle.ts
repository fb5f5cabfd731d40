// Micro-benchmark: sequential reserve + settle round trips against the local Redis, with a
// product user, an org cap and a connection cap (the hot path's two Redis calls). Prints the
// round trip as this process sees it and the scripts' time inside Redis (INFO commandstats).
// `node dist/bench/micro/reserve-settle.js [iterations] [draft|no-draft]`: with `no-draft`,
// reserve keeps no in-flight draft (to measure what the draft costs; the gateway keeps one).
import { createMoneyLayer } from '../../src/billing/compose.js';
import type { RequestAccounts } from '../../src/billing/budget-store.js';
import { monthlyPeriod } from '../../src/periods.js';
import { createDbPool } from '../../src/db/pool.js';
import { newRequestId } from '../../src/ids.js';
import { connectRedis } from '../../src/redis/connect.js';
import { redisTarget } from '../../src/redis/target.js';
import { createRedisKeys } from '../../src/redis/keys.js';
import { defineScripts } from '../../src/redis/scripts.js';
import { benchUsageRecord } from '../bench-records.js';
import { deleteKeysUnder } from '../targets.js';

const iterations = Number(process.argv[2] ?? 3000);
const withDraft = (process.argv[3] ?? 'draft') !== 'no-draft';
const redis = connectRedis(
  redisTarget({
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_CLUSTER_NODES: process.env.REDIS_CLUSTER_NODES,
  }),
  { maxRetriesPerRequest: 2 },
);
const db = createDbPool(
  process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_bench',
  2,
);
const keys = createRedisKeys(`micro-${process.pid}`);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const period = monthlyPeriod(new Date(), null);
const orgId = 'org_micro';
const accounts: RequestAccounts = {
  orgId,
  appConnectionId: 'conn_micro',
  walletPays: true,
  credentials: null,
  orgCap: { capNano: 10n ** 15n, period },
  connectionCap: { capNano: 10n ** 15n, period },
  user: { productUserId: 'pu_micro', capNano: 10n ** 12n, creditMode: 'enforce', period },
};
await scripts.accountLoad(
  { account: keys.wallet(orgId), expiries: keys.holdExpiries(keys.wallet(orgId)) },
  { field: 'balance', amount_nano: (10n ** 15n).toString(), expire_at_ms: '' },
);

/** Microseconds Redis spent in EVALSHA so far (all clients: run it on a quiet Redis). */
async function scriptMicros(): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(stats)?.[1] ?? 0);
}

const timings = { reserve: 0, settle: 0 };
const redisBefore = await scriptMicros();
for (let index = 0; index < iterations; index += 1) {
  const requestId = newRequestId();
  const record = (costNano: bigint, tokens: number): ReturnType<typeof benchUsageRecord> =>
    benchUsageRecord({
      requestId,
      orgId,
      appConnectionId: accounts.appConnectionId,
      productUserId: 'pu_micro',
      inputTokens: tokens,
      outputTokens: tokens,
      costNano,
      heldNano: 12_600n,
    });
  let started = performance.now();
  await store.reserve({
    requestId,
    accounts,
    amountNano: 12_600n,
    ...(withDraft && { lostRecord: record(0n, 0) }),
  });
  timings.reserve += performance.now() - started;
  started = performance.now();
  await store.settle(record(12_600n, 18), accounts);
  timings.settle += performance.now() - started;
}
const redisMicros = (await scriptMicros()) - redisBefore;
process.stdout.write(
  `${withDraft ? 'with' : 'without'} the in-flight draft: reserve ${((timings.reserve / iterations) * 1000).toFixed(0)} µs, settle ${((timings.settle / iterations) * 1000).toFixed(0)} µs per call (${iterations} sequential); inside Redis ${(redisMicros / iterations).toFixed(1)} µs per reserve + settle\n`,
);
await deleteKeysUnder(redis, `micro-${process.pid}`);
await redis.quit();
await db.end();
