// Amount limits and scripts that fail whole: on the real Redis and Postgres, an amount beyond
// what the money layer handles exactly is refused, and a script that refuses writes nothing.
import { createMoneyLayer } from '../src/billing/compose.js';
import { afterAll, describe, expect, it } from 'vitest';
import { capInvalidation, CapTargetError, setCapAs } from '../src/admin/caps.js';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { monthlyPeriod } from '../src/periods.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { AmountRangeError, MAX_AMOUNT_NANO } from '../src/money.js';
import { ProductUserManagement } from '../src/product-users/management.js';
import { listingField } from '../src/ledger/unwritten-usage.js';
import { scanKeys } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { creditsChangeKeys } from './support/credits-change-keys.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('limits');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { wallets, budget: store } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: 60_000,
});
const invalidations = invalidationPublisher(redis, keys.invalidationChannel());
const management = new ProductUserManagement(db, redis, keys, scripts, invalidations);
/** 2^51 nano-units: the first amount a script refuses. */
const LUA_LIMIT = 2n ** 51n;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

let orgCounter = 0;
const uniqueOrg = (): string => `org_limits_${Date.now()}_${(orgCounter += 1)}`;

/** Every key of one org under this file's prefix, with its type and whole content. */
async function snapshot(orgId: string): Promise<Record<string, unknown>> {
  const found: string[] = [];
  await scanKeys(redis, `${prefix}:{o:${orgId}}*`, async (page) => void found.push(...page));
  const state: Record<string, unknown> = {};
  for (const key of found.sort()) {
    const type = await redis.type(key);
    if (type === 'hash') state[key] = await redis.hgetall(key);
    else if (type === 'zset') state[key] = await redis.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'stream') state[key] = await redis.xrange(key, '-', '+');
    else state[key] = [type, await redis.get(key)];
  }
  return state;
}

/** A wallet, a capped user with one credit grant, an org cap: every account a request uses. */
async function fundedOrg(): Promise<{ orgId: string; accounts: RequestAccounts }> {
  const orgId = uniqueOrg();
  const period = monthlyPeriod(new Date(), null);
  const wallet = keys.wallet(orgId);
  await scripts.accountLoad(
    { account: wallet, expiries: keys.holdExpiries(wallet) },
    { field: 'balance', amount_nano: '5000000', expire_at_ms: '' },
  );
  const accounts: RequestAccounts = {
    orgId,
    appConnectionId: 'conn_limits',
    orgCap: { capNano: 10_000_000n, period },
    connectionCap: null,
    user: { productUserId: 'pu_limits', capNano: 100n, creditMode: 'enforce', period },
    walletPays: true,
    credentials: null,
  };
  for (const [key, field] of [
    [keys.orgCap(orgId, period.key), 'spent'],
    [keys.userSpend(orgId, 'pu_limits', period.key), 'spent'],
  ] as const) {
    await scripts.accountLoad(
      { account: key, expiries: keys.holdExpiries(key) },
      { field, amount_nano: '0', expire_at_ms: String(period.end.getTime() + 60_000) },
    );
  }
  await scripts.creditsLoad(
    {
      user_credits: keys.userCredits(orgId, 'pu_limits', 'USD'),
      user_grants: keys.userGrants(orgId, 'pu_limits', 'USD'),
    },
    { ttl_ms: '600000' },
    ['grant_a', '1000000', String(Date.now() + 86_400_000)],
  );
  return { orgId, accounts };
}

describe('a script given an amount out of range writes nothing', () => {
  it('reserve: an amount, a cap, or an expiry that is not a time', async () => {
    const { orgId, accounts } = await fundedOrg();
    const before = await snapshot(orgId);
    const reserve = (amountNano: bigint, over: Partial<RequestAccounts> = {}) =>
      store.reserve({ requestId: newRequestId(), accounts: { ...accounts, ...over }, amountNano });
    await expect(reserve(LUA_LIMIT)).rejects.toThrow(/gw_amount_out_of_range/);
    await expect(reserve(10n ** 18n * 10n ** 9n)).rejects.toThrow(/gw_invalid_argument/);
    await expect(
      reserve(10n, { orgCap: { capNano: LUA_LIMIT, period: accounts.orgCap!.period } }),
    ).rejects.toThrow(/gw_amount_out_of_range/);
    // A hold's expiry that is not a time once left `reserved` raised with no hold listed.
    const unused = keys.orgCap(orgId, 'unused');
    await expect(
      scripts.reserve(
        {
          wallet: keys.wallet(orgId),
          wallet_expiries: keys.holdExpiries(keys.wallet(orgId)),
          org_cap: unused,
          org_cap_expiries: keys.holdExpiries(unused),
          conn_cap: unused,
          conn_cap_expiries: keys.holdExpiries(unused),
          user_spend: unused,
          user_spend_expiries: keys.holdExpiries(unused),
          user_credits: unused,
          user_grants: unused,
          cred_cooldowns: keys.credentialCooldowns(orgId),
          cred_rotation: keys.credentialRotation(orgId),
          in_flight: keys.inFlight(orgId),
          key_rate: unused,
          user_rate: unused,
          previous_spend: unused,
          previous_spend_expiries: keys.holdExpiries(unused),
        },
        {
          request_id: 'req_bad_expiry',
          amount_nano: '1000',
          now_ms: Date.now(),
          expires_at_ms: 'soon',
          wallet_pays: '1',
          org_cap_nano: '',
          conn_cap_nano: '',
          user_cap_nano: '',
          user_mode: 'none',
          credentials: '',
          byok_only: '0',
          draft: '',
          key_rpm: '',
          user_rpm: '',
        },
      ),
    ).rejects.toThrow(/gw_invalid_argument: expires_at_ms/);
    expect(await snapshot(orgId)).toEqual(before);
  });

  it('settle: a cost out of range leaves no marker, no charge, no record; a retry in range settles', async () => {
    const { orgId, accounts } = await fundedOrg();
    const requestId = newRequestId();
    expect(await store.reserve({ requestId, accounts, amountNano: 1_000n })).toEqual({
      kind: 'held',
      credentialId: null,
    });
    const before = await snapshot(orgId);
    const huge = 10n ** 18n * 10n ** 9n;
    await expect(
      store.settle(
        usageRecord(orgId, huge, {
          requestId,
          productUserId: 'pu_limits',
          walletCostNano: huge,
          reservedNano: 1_000n,
        }),
        accounts,
      ),
    ).rejects.toThrow(/gw_invalid_argument: cost_nano/);
    expect(await snapshot(orgId)).toEqual(before);
    expect(await redis.exists(keys.settled(orgId, requestId))).toBe(0);
    expect(
      await store.settle(
        usageRecord(orgId, 600n, {
          requestId,
          productUserId: 'pu_limits',
          walletCostNano: 600n,
          reservedNano: 1_000n,
        }),
        accounts,
      ),
    ).toBe('settled');
    expect(await redis.hmget(keys.wallet(orgId), 'balance', 'reserved')).toEqual(['4999400', '0']);
  });

  it('settle: a stored credit beyond range (the 1e18 grant) fails before the marker and the wallet charge', async () => {
    const { orgId, accounts } = await fundedOrg();
    // What a 1e18-dollar grant put in Redis before amounts were bounded.
    await redis.hset(
      keys.userCredits(orgId, 'pu_limits', 'USD'),
      'g:grant_a',
      '1' + '0'.repeat(27),
    );
    const requestId = newRequestId();
    const before = await snapshot(orgId);
    const record = usageRecord(orgId, 500n, {
      requestId,
      productUserId: 'pu_limits',
      walletCostNano: 500n,
      reservedNano: 500n,
    });
    await expect(store.settle(record, accounts)).rejects.toThrow(/credit grant_a/);
    expect(await snapshot(orgId)).toEqual(before);
    expect(await redis.exists(keys.settled(orgId, requestId))).toBe(0);
    expect(await redis.hget(keys.wallet(orgId), 'balance')).toBe('5000000');
  });

  it('account-rebuild-user: a bad argument, or a stored credit beyond range (the 1e18 grant), installs neither the account nor any credit', async () => {
    const orgId = uniqueOrg();
    const period = monthlyPeriod(new Date(), null);
    const account = keys.userSpend(orgId, 'pu_limits', period.key);
    const credits = keys.userCredits(orgId, 'pu_limits', 'USD');
    const rebuildKeys = {
      account,
      expiries: keys.holdExpiries(account),
      rebuilds: keys.rebuilds(orgId),
      user_credits: credits,
      user_grants: keys.userGrants(orgId, 'pu_limits', 'USD'),
    };
    // The account is listed (a rebuild under way); the user's credits hold what a 1e18-dollar
    // grant put in Redis before amounts were bounded.
    await redis.hset(keys.rebuilds(orgId), account, '0', listingField(account), 'token');
    await redis.hset(credits, 'g:grant_a', '1' + '0'.repeat(27));
    const args = {
      field: 'spent',
      amount_nano: '100',
      expire_at_ms: String(period.end.getTime() + 60_000),
      missed_at_cut: '0',
      generation: 'gen',
      listing_field: listingField(account),
      listing: 'token',
      ttl_ms: '600000',
    };
    const expires = String(Date.now() + 86_400_000);
    const before = await snapshot(orgId);
    await expect(
      scripts.accountRebuildUser(rebuildKeys, args, [
        'grant_b',
        '5',
        expires,
        'grant_a',
        '7',
        expires,
      ]),
    ).rejects.toThrow(/gw_invalid_argument: credit/);
    for (const [bad, grants, error] of [
      [{ ttl_ms: 'soon' }, [], /ttl_ms/],
      [{}, ['grant_b', '5'], /triples/],
      [{}, ['grant_b', LUA_LIMIT.toString(), expires], /gw_amount_out_of_range/],
      [{}, ['grant_b', '5', 'never'], /expires_at_ms/],
    ] as const) {
      await expect(
        scripts.accountRebuildUser(rebuildKeys, { ...args, ...bad }, [...grants]),
      ).rejects.toThrow(error);
    }
    expect(await snapshot(orgId)).toEqual(before);
    // In range, it installs both.
    await redis.hdel(credits, 'g:grant_a');
    expect(await scripts.accountRebuildUser(rebuildKeys, args, ['grant_b', '5', expires])).toEqual([
      1,
      '100',
    ]);
    expect(await redis.hmget(credits, 'g:grant_b', 'loaded')).toEqual(['5', '1']);
  });

  it('failover, account-load, credits-load and credits-change refuse too', async () => {
    const { orgId, accounts } = await fundedOrg();
    const before = await snapshot(orgId);
    await expect(
      store.failover({
        requestId: newRequestId(),
        accounts,
        failedCredentialId: 'cred_x',
        cooldownUntilMs: Date.now() + 1000,
        amountNano: LUA_LIMIT,
        failure: 'failed_over',
        upstreamStatus: 429,
      }),
    ).rejects.toThrow(/gw_amount_out_of_range/);
    const wallet = keys.wallet(orgId);
    await expect(
      scripts.accountLoad(
        { account: `${wallet}:other`, expiries: `${wallet}:other:resv` },
        { field: 'balance', amount_nano: LUA_LIMIT.toString(), expire_at_ms: '' },
      ),
    ).rejects.toThrow(/gw_amount_out_of_range/);
    const credits = creditsChangeKeys(keys, orgId, 'pu_limits');
    await expect(
      scripts.creditsLoad(credits, { ttl_ms: '1000' }, [
        'grant_ok',
        '5',
        String(Date.now() + 1000),
        'grant_big',
        '1' + '0'.repeat(27),
        String(Date.now() + 1000),
      ]),
    ).rejects.toThrow(/gw_invalid_argument: remaining_nano/);
    await expect(
      scripts.creditsChange(credits, {
        action: 'add',
        grant_id: 'grant_big',
        amount_nano: LUA_LIMIT.toString(),
        expires_at_ms: String(Date.now() + 1000),
        ttl_ms: '',
        keep_held: '',
      }),
    ).rejects.toThrow(/gw_amount_out_of_range/);
    expect(await snapshot(orgId)).toEqual(before);
  });
});

describe('credit revocation', () => {
  it('a load that read Postgres before a revocation does not bring the grant back', async () => {
    const orgId = uniqueOrg();
    const credits = creditsChangeKeys(keys, orgId, 'pu_revoked');
    const expires = String(Date.now() + 86_400_000);
    // The loader read both grants as active; the revocation lands before it writes.
    await scripts.creditsChange(credits, {
      action: 'remove',
      grant_id: 'grant_revoked',
      amount_nano: '',
      expires_at_ms: '',
      ttl_ms: '600000',
      keep_held: '1',
    });
    await scripts.creditsLoad(credits, { ttl_ms: '600000' }, [
      'grant_revoked',
      '700',
      expires,
      'grant_kept',
      '300',
      expires,
    ]);
    expect(await redis.hget(credits.user_credits, 'g:grant_revoked')).toBeNull();
    expect(await redis.zrange(credits.user_grants, 0, -1)).toEqual(['grant_kept']);
    expect(await redis.pttl(credits.user_credits)).toBeGreaterThan(0);
  });
});

describe('amounts at the entry points', () => {
  it('refuses a top-up or a set beyond the limit, and top-ups that add up past it', async () => {
    const orgId = await createOrganization(db, 'limits-wallet');
    await expect(wallets.topUp(orgId, MAX_AMOUNT_NANO + 1n)).rejects.toThrow(AmountRangeError);
    await expect(wallets.setBalance(orgId, MAX_AMOUNT_NANO + 1n)).rejects.toThrow(AmountRangeError);
    await wallets.topUp(orgId, MAX_AMOUNT_NANO - 10n);
    await expect(wallets.topUp(orgId, 11n)).rejects.toThrow(/the wallet balance would be/);
    await wallets.topUp(orgId, 10n);
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(MAX_AMOUNT_NANO);
    const { rows } = await db.query(
      'SELECT count(*)::int AS n FROM wallet_transactions WHERE org_id = $1',
      [orgId],
    );
    expect(rows[0]).toEqual({ n: 2 });
  });

  it("refuses credit grants that would take a user's credits in one currency past the limit", async () => {
    const orgId = await createOrganization(db, 'limits-credits');
    const appId = await createApp(db, orgId, 'limits-app');
    const { user } = await management.upsert({ orgId, appId, externalUserId: 'rich' });
    const grant = (amountNano: bigint, currency = 'USD', idempotencyKey: string | null = null) =>
      management.grantCredits({
        orgId,
        productUserId: user.id,
        amountNano,
        currency,
        expiresAt: null,
        reason: null,
        idempotencyKey,
      });
    await grant(MAX_AMOUNT_NANO / 2n);
    await grant(MAX_AMOUNT_NANO / 2n, 'USD', 'second-half');
    await expect(grant(1n)).rejects.toThrow(AmountRangeError);
    // A replay is the first grant again, not a new one: it is answered, not range-checked.
    expect(await grant(MAX_AMOUNT_NANO / 2n, 'USD', 'second-half')).toMatchObject({
      created: false,
    });
    // Another currency is another total.
    await grant(MAX_AMOUNT_NANO, 'EUR');
    const { rows } = await db.query(
      'SELECT currency, count(*)::int AS n FROM credit_grants WHERE product_user_id = $1 GROUP BY currency ORDER BY currency',
      [user.id],
    );
    expect(rows).toEqual([
      { currency: 'EUR', n: 1 },
      { currency: 'USD', n: 2 },
    ]);
  });

  it('refuses a cap in another currency than the settlement one, or beyond the limit', async () => {
    const orgId = await createOrganization(db, 'limits-caps');
    const target = { scope: 'org', orgId } as const;
    const invalidation = capInvalidation(redis, keys, invalidations);
    const actor = { userId: 'cli' };
    await expect(
      setCapAs(db, invalidation, actor, target, { amountNano: 1_000_000_000n, currency: 'EUR' }),
    ).rejects.toThrow(CapTargetError);
    await expect(
      setCapAs(db, invalidation, actor, target, {
        amountNano: MAX_AMOUNT_NANO + 1n,
        currency: 'USD',
      }),
    ).rejects.toThrow(AmountRangeError);
    const { rows } = await db.query('SELECT id FROM cap_rules WHERE org_id = $1', [orgId]);
    expect(rows).toEqual([]);
  });
});
