// Micro-benchmark: sequential reserve + settle round trips against the local Redis, with a
// product user, an org cap and a connection cap (the hot path's two Redis calls).
import { createMoneyLayer } from '../../src/billing/compose.js';
import type { RequestAccounts } from '../../src/billing/budget-store.js';
import { monthlyPeriod } from '../../src/periods.js';
import { createDbPool } from '../../src/db/pool.js';
import { newRequestId } from '../../src/ids.js';
import { connectRedis, redisTarget } from '../../src/redis/connect.js';
import { createRedisKeys } from '../../src/redis/keys.js';
import { defineScripts } from '../../src/redis/scripts.js';
import { benchUsageRecord } from '../bench-records.js';
import { deleteKeysUnder } from '../targets.js';

const iterations = Number(process.argv[2] ?? 3000);
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

const timings = { reserve: 0, settle: 0 };
for (let index = 0; index < iterations; index += 1) {
  const requestId = newRequestId();
  let started = performance.now();
  await store.reserve({ requestId, accounts, amountNano: 12_600n });
  timings.reserve += performance.now() - started;
  started = performance.now();
  await store.settle(
    benchUsageRecord({
      requestId,
      orgId,
      appConnectionId: accounts.appConnectionId,
      productUserId: 'pu_micro',
      inputTokens: 20,
      outputTokens: 16,
      costNano: 12_600n,
      heldNano: 12_600n,
    }),
    accounts,
  );
  timings.settle += performance.now() - started;
}
process.stdout.write(
  `reserve ${((timings.reserve / iterations) * 1000).toFixed(0)} µs, settle ${((timings.settle / iterations) * 1000).toFixed(0)} µs per call (${iterations} sequential)\n`,
);
await deleteKeysUnder(redis, `micro-${process.pid}`);
await redis.quit();
await db.end();
