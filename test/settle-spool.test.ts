// The settle spool against the real Redis and Postgres, in process: an entry round-trips with
// every account it touches, and a spooled settle whose first attempt did run after all (its
// reply was lost) is retired without charging twice, even once settle's marker has expired.
import { createMoneyLayer } from '../src/billing/compose.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { parseSpoolLine, spoolLine } from '../src/billing/spool-entry.js';
import { GatewayMetrics } from '../src/metrics.js';
import { newRequestId } from '../src/ids.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord, walletAccounts } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { spoolFiles, testSettleSpool } from './support/settle-spool.js';
import { SettleSpool } from '../src/billing/settle-spool.js';
import { RecordedUsage } from '../src/ledger/recorded-usage.js';
import { createLogger } from '../src/log.js';
import type { DbPool } from '../src/db/pool.js';

const prefix = uniquePrefix('spool-unit');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
/** Holds that lapse within 600 ms unless renewed (a third of that, while a request holds). */
const HOLD_TTL_MS = 600;
const { budget: shortHolds } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: HOLD_TTL_MS,
});
const metrics = new GatewayMetrics(false);
/** Postgres out of reach (nothing listens there): a replay cannot check the records yet. */
const unreachableDb = createDbPool('postgres://postgres@127.0.0.1:1/gw', 1);
unreachableDb.on('error', () => undefined);

/** An instance's spool in `dir` (another instance's directory: it can take files over). */
const spoolIn = (dir: string, pool: DbPool): SettleSpool =>
  new SettleSpool(
    { dir, namespace: prefix },
    {
      budget: shortHolds,
      recorded: new RecordedUsage(redis, pool, keys),
      redisReady: () => true,
      logger: createLogger('silent'),
      counters: new GatewayMetrics(false),
    },
  );

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await Promise.all([db.end(), unreachableDb.end()]);
});

describe('settle spool entries', () => {
  it('round-trip the record and every account the settle touches', () => {
    const period = { start: new Date('2026-11-01'), end: new Date('2026-12-01'), key: '1' };
    const record = usageRecord('org_rt', 123n, { productUserId: 'pu_1', credentialId: null });
    const accounts: RequestAccounts = {
      orgId: 'org_rt',
      appConnectionId: 'conn_rt',
      orgCap: { capNano: 10n ** 18n, period },
      connectionCap: null,
      user: { productUserId: 'pu_1', capNano: 5n, creditMode: 'enforce', period },
      walletPays: true,
      credentials: { tiers: [['cred_a'], ['cred_b', 'cred_c']], byokOnly: false },
    };
    const parsed = parseSpoolLine(spoolLine({ record, accounts }));
    expect(parsed.accounts).toEqual(accounts);
    expect(parsed.record).toMatchObject({ ...record, creditsCostNano: 0n });
  });
});

describe('settle spool replay', () => {
  it('retires without charging again a settle that ran although its caller saw it fail', async () => {
    const orgId = `org_spool_${Date.now()}`;
    const walletKey = keys.wallet(orgId);
    await redis.hset(walletKey, 'balance', '1000000', 'reserved', '0');
    const record = usageRecord(orgId, 400n, { walletCostNano: 400n });
    const accounts = walletAccounts(record);
    const { spool, dir } = testSettleSpool({ db, redis, keys, budget: store }, prefix, metrics);
    await spool.open();
    // The settle ran in Redis, its reply was lost, the caller spooled it...
    await store.settle(record, accounts);
    await spool.append(record, accounts);
    // ...and Redis forgot the idempotency marker before the spool replayed.
    await redis.del(keys.settled(orgId, record.requestId));

    // Replayed until retired, as the spool's timer would (a loaded Postgres may refuse the
    // check for a while: then the entry waits).
    await eventually(async () => {
      await spool.replay();
      return spoolFiles(dir).length === 0 ? true : undefined;
    });
    expect(await redis.hget(walletKey, 'balance')).toBe('999600');
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(1);
    expect(await metrics.registry.getSingleMetricAsString('gw_settle_spool_pending')).toMatch(
      /^gw_settle_spool_pending 0$/m,
    );
    await spool.stop();
  });
});

describe('a spooled settle waiting to replay', () => {
  it('keeps its holds: nothing is admitted on the money its request will be charged (decision 564)', async () => {
    const orgId = `org_spool_holds_${Date.now()}`;
    const walletKey = keys.wallet(orgId);
    await redis.hset(walletKey, 'balance', '1000', 'reserved', '0');
    const { spool, dir } = testSettleSpool({ db, redis, keys, budget: shortHolds }, prefix);
    await spool.open();
    const record = usageRecord(orgId, 800n, { walletCostNano: 800n, reservedNano: 800n });
    const accounts = walletAccounts(record);
    expect(
      await shortHolds.reserve({ requestId: record.requestId, accounts, amountNano: 800n }),
    ).toMatchObject({ kind: 'held' });
    // Its settle failed (Redis out of reach for it): spooled, as settleWithRetry does. The
    // replay waits (Redis came back, the check of the records cannot run yet, or the timer).
    await spool.append(record, accounts);
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 3));
    // The 800 it will be charged stays held: a request for 800 more is refused.
    expect(
      await shortHolds.reserve({ requestId: newRequestId(), accounts, amountNano: 800n }),
    ).toMatchObject({ kind: 'wallet_short', availableNano: 200n });
    expect(await redis.hget(walletKey, 'reserved')).toBe('800');
    // Replayed: charged once, its hold released, and it is renewed no more.
    await eventually(async () => {
      await spool.replay();
      return spoolFiles(dir).length === 0 ? true : undefined;
    });
    expect(await redis.hmget(walletKey, 'balance', 'reserved')).toEqual(['200', '0']);
    expect(await redis.zcard(keys.holdExpiries(walletKey))).toBe(0);
    await spool.stop();
  });
});

describe('a spooled settle taken over from a gone instance', () => {
  it('keeps its holds while the instance that took it over cannot replay it yet', async () => {
    const orgId = `org_spool_adopted_${Date.now()}`;
    const walletKey = keys.wallet(orgId);
    await redis.hset(walletKey, 'balance', '1000', 'reserved', '0');
    const { spool: gone, dir } = testSettleSpool({ db, redis, keys, budget: shortHolds }, prefix);
    await gone.open();
    const record = usageRecord(orgId, 800n, { walletCostNano: 800n, reservedNano: 800n });
    const accounts = walletAccounts(record);
    expect(
      await shortHolds.reserve({ requestId: record.requestId, accounts, amountNano: 800n }),
    ).toMatchObject({ kind: 'held' });
    await gone.append(record, accounts);
    // Its instance leaves before the replay (its file stays), and another one takes the file
    // over while Postgres is out of reach: it cannot tell whether the request was recorded,
    // so the entry waits in its spool.
    await gone.stop();
    const taker = spoolIn(dir, unreachableDb);
    await taker.open();
    await taker.replay();
    expect(spoolFiles(dir)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, HOLD_TTL_MS * 3));
    // The 800 it will be charged stays held: a request for 800 more is refused.
    expect(
      await shortHolds.reserve({ requestId: newRequestId(), accounts, amountNano: 800n }),
    ).toMatchObject({ kind: 'wallet_short', availableNano: 200n });
    expect(await redis.hget(walletKey, 'reserved')).toBe('800');
    // That instance leaves too; one that reaches Postgres takes the file over and replays it:
    // charged once, its hold released.
    await taker.stop();
    const replayer = spoolIn(dir, db);
    await replayer.open();
    await eventually(async () => {
      await replayer.replay();
      return spoolFiles(dir).length === 0 ? true : undefined;
    });
    expect(await redis.hmget(walletKey, 'balance', 'reserved')).toEqual(['200', '0']);
    expect(await redis.zcard(keys.holdExpiries(walletKey))).toBe(0);
    await replayer.stop();
  });
});
