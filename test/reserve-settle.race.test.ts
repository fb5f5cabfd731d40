// reserve.lua / settle.lua against real Redis: never overdrawn under concurrency, holds that
// lapse are released, and a repeated settle changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { AccountLoader } from '../src/billing/account-loader.js';
import { UnwrittenUsage } from '../src/ledger/unwritten-usage.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { RedisBudgetStore } from '../src/billing/redis-budget-store.js';
import { WalletService } from '../src/billing/wallets.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { monthlyPeriod } from '../src/periods.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { lostRecord, usageRecord } from './support/records.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { releaseKeys } from './support/release-keys.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';

const prefix = uniquePrefix('reserve');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const wallets = new WalletService(db, redis, keys, scripts);

const loader = new AccountLoader(db, keys, scripts, wallets, new UnwrittenUsage(redis, db, keys));

function storeWithTtl(ttlMs: number): RedisBudgetStore {
  return new RedisBudgetStore(redis, keys, scripts, loader, ttlMs);
}

/** Only the org wallet pays: no caps, no product user. */
function walletOnly(orgId: string, walletPays = true): RequestAccounts {
  return {
    orgId,
    appConnectionId: 'conn_x',
    orgCap: null,
    connectionCap: null,
    user: null,
    walletPays,
    credentials: null,
  };
}

async function fundWallet(orgId: string, nano: bigint): Promise<void> {
  await scripts.accountLoad(
    { account: keys.wallet(orgId), expiries: keys.holdExpiries(keys.wallet(orgId)) },
    { field: 'balance', amount_nano: nano.toString(), expire_at_ms: '' },
  );
}

/** A settled request's record; `heldNano` is what its reserve held (settle releases it). */
function record(
  orgId: string,
  requestId: string,
  walletCostNano: bigint,
  heldNano: bigint,
): UsageRecord {
  return usageRecord(orgId, walletCostNano, { requestId, walletCostNano, reservedNano: heldNano });
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

describe('RedisBudgetStore on a shared client', () => {
  it('adds one ready listener to the client, not one per store', () => {
    storeWithTtl(60_000);
    const listeners = redis.listenerCount('ready');
    for (let index = 0; index < 20; index += 1) storeWithTtl(60_000);
    expect(redis.listenerCount('ready')).toBe(listeners);
  });
});

describe('reserve.lua', () => {
  it('lets exactly as many concurrent holds through as the wallet covers', async () => {
    const orgId = `org_race_${Date.now()}`;
    const holdNano = 1_000_000n; // $0.001 each
    const fits = 37;
    await fundWallet(orgId, holdNano * BigInt(fits) + 999n);
    const store = storeWithTtl(60_000);
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, () =>
        store.reserve({
          requestId: newRequestId(),
          accounts: walletOnly(orgId),
          amountNano: holdNano,
        }),
      ),
    );
    const held = outcomes.filter((outcome) => outcome.kind === 'held').length;
    expect(held).toBe(fits);
    for (const outcome of outcomes) {
      if (outcome.kind !== 'held') expect(outcome.kind).toBe('wallet_short');
    }
    expect((await walletState(orgId)).reserved).toBe(holdNano * BigInt(fits));
  });

  it('settles actual cost, releases the rest, and ignores a repeated settle', async () => {
    const orgId = `org_settle_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    expect(
      await store.reserve({ requestId, accounts: walletOnly(orgId), amountNano: 3_000_000n }),
    ).toEqual({ kind: 'held', credentialId: null });
    expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 3_000_000n });

    expect(
      await store.settle(record(orgId, requestId, 1_234_567n, 3_000_000n), walletOnly(orgId)),
    ).toBe('settled');
    expect(await walletState(orgId)).toEqual({ balance: 3_765_433n, reserved: 0n });
    expect(
      await store.settle(record(orgId, requestId, 1_234_567n, 3_000_000n), walletOnly(orgId)),
    ).toBe('already_settled');
    expect(await walletState(orgId)).toEqual({ balance: 3_765_433n, reserved: 0n });
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(1);
  });

  it('releases a hold whose instance never settled once its TTL passes', async () => {
    const orgId = `org_ttl_${Date.now()}`;
    await fundWallet(orgId, 2_000_000n);
    // 3 s: the hold must still be there for the next reserve, however slow a loaded machine is
    const shortLived = storeWithTtl(3000);
    const crashed = newRequestId();
    expect(
      (
        await shortLived.reserve({
          requestId: crashed,
          accounts: walletOnly(orgId),
          amountNano: 2_000_000n,
        })
      ).kind,
    ).toBe('held');
    // Wallet fully held: the next request cannot reserve.
    const blocked = await shortLived.reserve({
      requestId: newRequestId(),
      accounts: walletOnly(orgId),
      amountNano: 1n,
    });
    expect(blocked).toEqual({ kind: 'wallet_short', availableNano: 0n });
    await new Promise((resolve) => setTimeout(resolve, 3100));
    // The next reserve sweeps the lapsed hold first.
    expect(
      (
        await shortLived.reserve({
          requestId: newRequestId(),
          accounts: walletOnly(orgId),
          amountNano: 1_500_000n,
        })
      ).kind,
    ).toBe('held');
    expect(await walletState(orgId)).toEqual({ balance: 2_000_000n, reserved: 1_500_000n });
    // A late settle of the lapsed request still charges and records, without double release.
    expect(
      await shortLived.settle(record(orgId, crashed, 100n, 2_000_000n), walletOnly(orgId)),
    ).toBe('settled');
    expect(await walletState(orgId)).toEqual({ balance: 1_999_900n, reserved: 1_500_000n });
  });

  it('holds nothing when the wallet does not pay', async () => {
    const orgId = `org_byok_${Date.now()}`;
    const store = storeWithTtl(60_000);
    expect(
      await store.reserve({
        requestId: newRequestId(),
        accounts: walletOnly(orgId, false),
        amountNano: 10n ** 12n,
      }),
    ).toEqual({ kind: 'held', credentialId: null });
    expect(await redis.exists(keys.wallet(orgId))).toBe(0);
  });
});

describe('a reserve given up on (decision 318)', () => {
  it('holds once when the same reserve runs twice (sent again after its connection closed)', async () => {
    const orgId = `org_twice_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    for (let run = 0; run < 2; run += 1) {
      expect(
        (await store.reserve({ requestId, accounts: walletOnly(orgId), amountNano: 2_000_000n }))
          .kind,
      ).toBe('held');
    }
    expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 2_000_000n });
    await store.settle(record(orgId, requestId, 1_000n, 2_000_000n), walletOnly(orgId));
    expect(await walletState(orgId)).toEqual({ balance: 4_999_000n, reserved: 0n });
  });

  it('holds once and answers held again when the same reserve runs twice on a tight wallet', async () => {
    // Its first copy's hold must not count against its second copy: counted, the second
    // answered wallet_short (the client refused) and the first copy's hold and draft stayed
    // until the hold lapsed, then recorded as a lost request.
    const orgId = `org_twice_tight_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    for (let run = 0; run < 2; run += 1) {
      expect(
        (await store.reserve({ requestId, accounts: walletOnly(orgId), amountNano: 3_000_000n }))
          .kind,
      ).toBe('held');
    }
    expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 3_000_000n });
    // Another request still sees only what is left.
    expect(
      (
        await store.reserve({
          requestId: newRequestId(),
          accounts: walletOnly(orgId),
          amountNano: 3_000_000n,
        })
      ).kind,
    ).toBe('wallet_short');
    await store.settle(record(orgId, requestId, 1_000n, 3_000_000n), walletOnly(orgId));
    expect(await walletState(orgId)).toEqual({ balance: 4_999_000n, reserved: 0n });
  });

  it('is not refused by its own first hold under an org cap either', async () => {
    const orgId = `org_twice_cap_${Date.now()}`;
    await fundWallet(orgId, 50_000_000n);
    const period = monthlyPeriod(new Date(), null);
    const capAccount = keys.orgCap(orgId, period.key);
    await scripts.accountLoad(
      { account: capAccount, expiries: keys.holdExpiries(capAccount) },
      { field: 'spent', amount_nano: '0', expire_at_ms: '' },
    );
    const accounts: RequestAccounts = {
      ...walletOnly(orgId),
      orgCap: { capNano: 4_000_000n, period },
    };
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    for (let run = 0; run < 2; run += 1) {
      expect((await store.reserve({ requestId, accounts, amountNano: 3_000_000n })).kind).toBe(
        'held',
      );
    }
    expect(await redis.hget(capAccount, 'reserved')).toBe('3000000');
    expect(
      (await store.reserve({ requestId: newRequestId(), accounts, amountNano: 3_000_000n })).kind,
    ).toBe('cap_exceeded');
  });

  it('a failover to the system route that runs twice holds once and is not refused the second time', async () => {
    const orgId = `org_failover_twice_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const requestId = newRequestId();
    const wallet = keys.wallet(orgId);
    const failover = (): Promise<unknown> =>
      scripts.failover(
        {
          wallet,
          wallet_expiries: keys.holdExpiries(wallet),
          cred_cooldowns: keys.credentialCooldowns(orgId),
          cred_rotation: keys.credentialRotation(orgId),
          usage_stream: keys.usageStream(orgId),
          in_flight: keys.inFlight(orgId),
        },
        {
          request_id: requestId,
          failed_credential_id: 'cred_1',
          cooldown_until_ms: Date.now() + 60_000,
          credentials: '',
          byok_only: '0',
          amount_nano: '3000000',
          now_ms: Date.now(),
          expires_at_ms: Date.now() + 60_000,
          org_id: orgId,
          failure: 'failed_over',
          upstream_status: 429,
        },
      );
    expect(await failover()).toEqual([0, '']);
    expect(await failover()).toEqual([0, '']);
    expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 3_000_000n });
  });

  it('releases its holds and its draft, records and charges nothing, and changes nothing run again', async () => {
    const orgId = `org_release_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    const other = newRequestId();
    for (const id of [requestId, other]) {
      await store.reserve({
        requestId: id,
        accounts: walletOnly(orgId),
        amountNano: 1_500_000n,
        lostRecord: lostRecord(orgId, { requestId: id }),
      });
    }
    expect(await redis.hexists(keys.inFlight(orgId), requestId)).toBe(1);
    for (let run = 0; run < 2; run += 1) {
      store.releases.release(requestId, releaseKeys(keys, orgId), 1_500_000n, {
        key: false,
        user: false,
      });
      await eventually(async () => (store.releases.waiting === 0 ? true : undefined));
      expect(await walletState(orgId)).toEqual({ balance: 5_000_000n, reserved: 1_500_000n });
      expect(await redis.zrange(keys.holdExpiries(keys.wallet(orgId)), 0, -1)).toEqual([
        `${other}:1500000`,
      ]);
      expect(await redis.hexists(keys.inFlight(orgId), requestId)).toBe(0);
      expect(await redis.hexists(keys.inFlight(orgId), other)).toBe(1);
      expect(await redis.exists(keys.usageStream(orgId))).toBe(0);
    }
  });
});

describe('gw wallet set', () => {
  it('leaves the live balance as it was when Postgres cannot record the change', async () => {
    const orgId = await createOrganization(db, `set ${prefix}`);
    await wallets.topUp(orgId, 1_000n);
    await wallets.loadIntoRedis(orgId);
    // Postgres refuses the set's wallet transaction (its insert names the kind as a parameter),
    // on the pool or on a client of it (a set is recorded in a transaction: decision 544).
    const failing = hookedPool(db, [
      {
        match: /INSERT INTO wallet_transactions/,
        values: (values) => values[1] === 'set',
        step: () => Promise.reject(new Error('postgres went away')),
      },
    ]);
    await expect(
      new WalletService(failing, redis, keys, scripts).setBalance(orgId, 5_000n),
    ).rejects.toThrow('postgres went away');
    expect(await walletState(orgId)).toEqual({ balance: 1_000n, reserved: 0n });
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(1_000n);

    await wallets.setBalance(orgId, 5_000n);
    expect(await walletState(orgId)).toEqual({ balance: 5_000n, reserved: 0n });
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(5_000n);
  });
});

describe('where holds are kept', () => {
  it('lists each hold with its amount beside the account and releases it by that listing', async () => {
    const orgId = `org_listing_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    await store.reserve({ requestId, accounts: walletOnly(orgId), amountNano: 700n });
    expect(await redis.zrange(keys.holdExpiries(keys.wallet(orgId)), 0, -1)).toEqual([
      `${requestId}:700`,
    ]);
    // The account itself holds only its two counters.
    expect(await redis.hkeys(keys.wallet(orgId))).toEqual(['balance', 'reserved']);
    await store.settle(record(orgId, requestId, 500n, 700n), walletOnly(orgId));
    expect(await redis.exists(keys.holdExpiries(keys.wallet(orgId)))).toBe(0);
    expect(await walletState(orgId)).toEqual({ balance: 4_999_500n, reserved: 0n });
  });

  it('rebuilds an account lost from Redis without the holds it listed; their late settles still charge', async () => {
    const orgId = await createOrganization(db, `lost ${prefix}`);
    await wallets.topUp(orgId, 1_000_000n);
    await wallets.loadIntoRedis(orgId);
    const store = storeWithTtl(60_000);
    const before = newRequestId();
    await store.reserve({ requestId: before, accounts: walletOnly(orgId), amountNano: 400_000n });
    // Evicted: the account goes, its hold listing stays behind.
    await redis.del(keys.wallet(orgId));
    const after = newRequestId();
    expect(
      await store.reserve({ requestId: after, accounts: walletOnly(orgId), amountNano: 300_000n }),
    ).toEqual({ kind: 'held', credentialId: null });
    expect(await redis.zrange(keys.holdExpiries(keys.wallet(orgId)), 0, -1)).toEqual([
      `${after}:300000`,
    ]);
    expect(await walletState(orgId)).toEqual({ balance: 1_000_000n, reserved: 300_000n });
    // The request that held on the lost account settles: charged, and `reserved` (which no
    // longer counts its hold) is left alone instead of going below what is really held.
    await store.settle(record(orgId, before, 250_000n, 400_000n), walletOnly(orgId));
    expect(await walletState(orgId)).toEqual({ balance: 750_000n, reserved: 300_000n });
  });

  it("charges an uncapped product user's spend without holding on it", async () => {
    const orgId = `org_uncapped_${Date.now()}`;
    await fundWallet(orgId, 5_000_000n);
    const store = storeWithTtl(60_000);
    const period = monthlyPeriod(new Date(), null);
    const accounts: RequestAccounts = {
      ...walletOnly(orgId),
      user: { productUserId: `pu_${orgId}`, capNano: null, creditMode: 'enforce', period },
    };
    const requestId = newRequestId();
    await store.reserve({ requestId, accounts, amountNano: 900n });
    const spendKey = keys.userSpend(orgId, `pu_${orgId}`, period.key);
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['0', '0']);
    expect(await redis.exists(keys.holdExpiries(spendKey))).toBe(0);
    await store.settle(record(orgId, requestId, 600n, 900n), accounts);
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['600', '0']);
    expect(await walletState(orgId)).toEqual({ balance: 4_999_400n, reserved: 0n });
  });
});

describe('accounts rebuilt from the ledger', () => {
  it('count usage settled in Redis that the writer has not put in Postgres yet, once', async () => {
    const orgId = `org_unwritten_${prefix}`;
    const connectionId = `conn_unwritten_${prefix}`;
    const store = storeWithTtl(60_000);
    const period = monthlyPeriod(new Date(), null);
    const accounts: RequestAccounts = {
      ...walletOnly(orgId, false),
      appConnectionId: connectionId,
      connectionCap: { capNano: 10_000n, period },
    };
    await new PostgresUsageSink(db).write([
      usageRecord(orgId, 400n, { appConnectionId: connectionId }),
    ]);
    // Settled while the connection's account was not in Redis: in the stream, not charged.
    const unwritten = usageRecord(orgId, 100n, { appConnectionId: connectionId });
    const alsoWritten = usageRecord(orgId, 200n, { appConnectionId: connectionId });
    const otherConnection = usageRecord(orgId, 5_000n, { appConnectionId: `${connectionId}_b` });
    for (const record of [unwritten, alsoWritten, otherConnection]) {
      await store.settle(record, accounts);
    }
    // The writer committed this one and has not deleted it from the stream yet.
    await new PostgresUsageSink(db).write([alsoWritten]);

    expect(await store.reserve({ requestId: newRequestId(), accounts, amountNano: 1n })).toEqual({
      kind: 'held',
      credentialId: null,
    });
    expect(await redis.hget(keys.connectionCap(orgId, connectionId, period.key), 'spent')).toBe(
      '700',
    );
  });

  it("rebuild a user's spend and credits with what unwritten usage spent of them", async () => {
    const orgId = await createOrganization(db, `unwritten credits ${prefix}`);
    const appId = await createApp(db, orgId, 'app');
    const productUserId = `pu_unwritten_${prefix}`;
    await db.query(
      'INSERT INTO product_users (id, org_id, app_id, external_user_id) VALUES ($1, $2, $3, $4)',
      [productUserId, orgId, appId, 'customer'],
    );
    await db.query(
      `INSERT INTO credit_grants (id, org_id, product_user_id, amount) VALUES ($1, $2, $3, $4)`,
      [`grant_${prefix}`, orgId, productUserId, '0.000001000'], // 1,000 nano
    );
    const period = monthlyPeriod(new Date(), null);
    const accounts: RequestAccounts = {
      ...walletOnly(orgId, false),
      user: { productUserId, capNano: 100n, creditMode: 'enforce', period },
    };
    const store = storeWithTtl(60_000);
    const requestId = newRequestId();
    expect(await store.reserve({ requestId, accounts, amountNano: 400n })).toEqual({
      kind: 'held',
      credentialId: null,
    });
    // 400 spent: the base allowance pays 100, the grant 300. The writer has not run.
    await store.settle(
      usageRecord(orgId, 400n, { requestId, productUserId, reservedNano: 400n }),
      accounts,
    );
    // The user's accounts leave Redis (the credits' TTL, an eviction) and are rebuilt.
    await redis.del(
      keys.userSpend(orgId, productUserId, period.key),
      keys.userCredits(orgId, productUserId, 'USD'),
      keys.userGrants(orgId, productUserId, 'USD'),
    );
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 800n }),
    ).toMatchObject({
      kind: 'allowance_short',
      spentNano: 400n,
      baseRemainingNano: 0n,
      creditsNano: 700n,
      availableNano: 700n,
    });
  });

  it('rebuild a wallet less what unwritten usage cost it', async () => {
    const orgId = await createOrganization(db, `unwritten ${prefix}`);
    await wallets.topUp(orgId, 1_000_000n);
    await redis.del(keys.wallet(orgId)); // a top-up leaves the wallet in Redis (decision 301)
    const store = storeWithTtl(60_000);
    // The wallet is not in Redis: settle records the cost without charging it.
    await store.settle(record(orgId, newRequestId(), 250_000n, 0n), walletOnly(orgId));
    await wallets.loadIntoRedis(orgId);
    expect(await walletState(orgId)).toEqual({ balance: 750_000n, reserved: 0n });
  });

  it('are loaded once for a burst of requests that find them missing, with the ledger spend', async () => {
    const orgId = `org_rebuild_${prefix}`;
    const connectionId = `conn_rebuild_${prefix}`;
    // Spend already in the ledger this month, which Redis has never seen.
    await new PostgresUsageSink(db).write([
      usageRecord(orgId, 400n, { appConnectionId: connectionId }),
      usageRecord(orgId, 200n, { appConnectionId: connectionId }),
    ]);
    await fundWallet(orgId, 1_000_000n);
    const ledgerSums: string[] = [];
    const count = (text: unknown): void => {
      if (String(text).includes('sum(u.sell_cost)')) ledgerSums.push(String(text));
    };
    const counting = Object.create(db) as typeof db;
    counting.query = ((...args: Parameters<typeof db.query>) => {
      count(args[0]);
      return (db.query as (...a: unknown[]) => unknown)(...args);
    }) as typeof db.query;
    // A rebuild sums the ledger in a snapshot, on a client of its own.
    counting.connect = (async () => {
      const client = await db.connect();
      const counted = Object.create(client) as typeof client;
      counted.query = ((...args: unknown[]) => {
        count(args[0]);
        return (client.query as (...a: unknown[]) => unknown).apply(client, args);
      }) as typeof client.query;
      counted.release = (...args: Parameters<typeof client.release>) => client.release(...args);
      return counted;
    }) as typeof db.connect;
    const store = new RedisBudgetStore(
      redis,
      keys,
      scripts,
      new AccountLoader(counting, keys, scripts, wallets, new UnwrittenUsage(redis, db, keys)),
      60_000,
    );
    const accounts: RequestAccounts = {
      ...walletOnly(orgId),
      appConnectionId: connectionId,
      connectionCap: { capNano: 1_600n, period: monthlyPeriod(new Date(), null) },
    };
    // The cap leaves 1,000 after the ledger's 600: exactly ten holds of 100 fit.
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () =>
        store.reserve({ requestId: newRequestId(), accounts, amountNano: 100n }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'held')).toHaveLength(10);
    expect(ledgerSums).toHaveLength(1);
  });
});
