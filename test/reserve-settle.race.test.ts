// reserve.lua / settle.lua against real Redis: never overdrawn under concurrency, holds that
// lapse are released, and a repeated settle changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisBudgetStore } from '../src/billing/redis-budget-store.js';
import { WalletService } from '../src/billing/wallets.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('reserve');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const wallets = new WalletService(db, redis, keys, scripts);

function storeWithTtl(ttlMs: number): RedisBudgetStore {
  return new RedisBudgetStore(redis, keys, scripts, wallets, ttlMs);
}

function record(orgId: string, requestId: string, walletCostNano: bigint): UsageRecord {
  return {
    requestId,
    createdAt: new Date(),
    orgId,
    appId: 'app_x',
    appConnectionId: 'conn_x',
    apiKeyId: 'key_x',
    productUserId: null,
    model: 'vendor_b/gpt-4o-mini',
    vendor: 'vendor_b',
    route: 'system',
    credentialId: null,
    stream: false,
    status: 'completed',
    upstreamStatus: 200,
    inputTokens: 10,
    outputTokens: 5,
    currency: 'USD',
    sellCostNano: walletCostNano,
    vendorCostNano: walletCostNano,
    walletCostNano,
    reservedNano: walletCostNano,
    latencyMs: 1,
  };
}

async function walletState(orgId: string): Promise<{ balance: bigint; reserved: bigint }> {
  const [balance, reserved] = await redis.hmget(keys.wallet(orgId), 'balance', 'reserved');
  return { balance: BigInt(balance!), reserved: BigInt(reserved!) };
}

beforeAll(async () => {
  await redis.ping();
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

describe('reserve.lua', () => {
  it('lets exactly as many concurrent holds through as the wallet covers', async () => {
    const orgId = `org_race_${Date.now()}`;
    const holdNano = 1_000_000n; // $0.001 each
    const fits = 37;
    await scripts.walletLoad([keys.wallet(orgId)], [(holdNano * BigInt(fits) + 999n).toString()]);
    const store = storeWithTtl(60_000);
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, () =>
        store.reserve({ requestId: newRequestId(), orgId, amountNano: holdNano, walletPays: true }),
      ),
    );
    const held = outcomes.filter((outcome) => outcome.ok).length;
    expect(held).toBe(fits);
    for (const outcome of outcomes) {
      if (!outcome.ok) {
        expect(outcome.error.code).toBe('gw_reservation_insufficient_balance');
        expect(outcome.error.status).toBe(402);
      }
    }
    expect((await walletState(orgId)).reserved).toBe(holdNano * BigInt(fits));
  });

  it('settles actual cost, releases the rest, and ignores a repeated settle', async () => {
    const orgId = `org_settle_${Date.now()}`;
    await scripts.walletLoad([keys.wallet(orgId)], ['5000000']);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    expect(await store.reserve({ requestId, orgId, amountNano: 3_000_000n, walletPays: true })).toEqual({ ok: true });
    expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 3_000_000n });

    expect(await store.settle(record(orgId, requestId, 1_234_567n))).toBe('settled');
    expect(await walletState(orgId)).toEqual({ balance: 3_765_433n, reserved: 0n });
    expect(await store.settle(record(orgId, requestId, 1_234_567n))).toBe('already_settled');
    expect(await walletState(orgId)).toEqual({ balance: 3_765_433n, reserved: 0n });
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(1);
  });

  it('releases a hold whose instance never settled once its TTL passes', async () => {
    const orgId = `org_ttl_${Date.now()}`;
    await scripts.walletLoad([keys.wallet(orgId)], ['2000000']);
    const shortLived = storeWithTtl(1000);
    const crashed = newRequestId();
    expect((await shortLived.reserve({ requestId: crashed, orgId, amountNano: 2_000_000n, walletPays: true })).ok).toBe(true);
    // Wallet fully held: the next request cannot reserve.
    const blocked = await shortLived.reserve({ requestId: newRequestId(), orgId, amountNano: 1n, walletPays: true });
    expect(blocked.ok).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The next reserve sweeps the lapsed hold first.
    expect((await shortLived.reserve({ requestId: newRequestId(), orgId, amountNano: 1_500_000n, walletPays: true })).ok).toBe(true);
    expect(await walletState(orgId)).toEqual({ balance: 2_000_000n, reserved: 1_500_000n });
    // A late settle of the lapsed request still charges and records, without double release.
    expect(await shortLived.settle(record(orgId, crashed, 100n))).toBe('settled');
    expect(await walletState(orgId)).toEqual({ balance: 1_999_900n, reserved: 1_500_000n });
  });

  it('holds nothing when the wallet does not pay', async () => {
    const orgId = `org_byok_${Date.now()}`;
    const store = storeWithTtl(60_000);
    expect(await store.reserve({ requestId: newRequestId(), orgId, amountNano: 10n ** 12n, walletPays: false })).toEqual({ ok: true });
    expect(await redis.exists(keys.wallet(orgId))).toBe(0);
  });
});
