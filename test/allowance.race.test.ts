// reserve.lua / settle.lua with caps, allowances and credits, against real Redis: exactly K
// of N concurrent requests get through a cap, credits pay after the base allowance
// (earliest-expiring grant first), expired grants count for nothing.
import { createMoneyLayer } from '../src/billing/compose.js';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { ProductUserManagement } from '../src/product-users/management.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { RequestAccounts, UserAccount } from '../src/billing/budget-store.js';
import { monthlyPeriod, type Period } from '../src/periods.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { creditsChangeKeys } from './support/credits-change-keys.js';
import { usageRecord } from './support/records.js';
import { releaseKeys } from './support/release-keys.js';
import { usageRecordFromFields } from '../src/ledger/usage-record.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';

const prefix = uniquePrefix('allow');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
/** A gateway whose holds lapse within a second (an instance that died mid-request). */
const { budget: shortHolds } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: 800,
});
const management = new ProductUserManagement(
  db,
  redis,
  keys,
  scripts,
  invalidationPublisher(redis, keys.invalidationChannel()),
);
const period = monthlyPeriod(new Date(), null);
let sequence = 0;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

function uniqueOrg(): string {
  sequence += 1;
  return `org_allow_${Date.now()}_${sequence}`;
}

function user(
  id: string,
  capNano: bigint | null,
  creditMode: UserAccount['creditMode'] = 'enforce',
): UserAccount {
  return { productUserId: id, capNano, creditMode, period };
}

function accounts(orgId: string, parts: Partial<RequestAccounts>): RequestAccounts {
  return {
    orgId,
    appConnectionId: 'conn_a',
    orgCap: null,
    connectionCap: null,
    user: null,
    walletPays: false,
    credentials: null,
    ...parts,
  };
}

/** A settled request's record; `heldNano` is what its reserve held (settle releases it). */
function record(
  orgId: string,
  requestId: string,
  costNano: bigint,
  heldNano = costNano,
): UsageRecord {
  return usageRecord(orgId, costNano, {
    requestId,
    appConnectionId: 'conn_a',
    reservedNano: heldNano,
  });
}

/** Fires N reserves at once, settles every held one at its full cost, returns how many held. */
async function race(n: number, costNano: bigint, accountsFor: (index: number) => RequestAccounts) {
  const attempts = Array.from({ length: n }, (_, index) => ({
    requestId: newRequestId(),
    accounts: accountsFor(index),
  }));
  const outcomes = await Promise.all(
    attempts.map((attempt) =>
      store.reserve({
        requestId: attempt.requestId,
        accounts: attempt.accounts,
        amountNano: costNano,
      }),
    ),
  );
  await Promise.all(
    attempts.map((attempt, index) =>
      outcomes[index]!.kind === 'held'
        ? store.settle(
            record(attempt.accounts.orgId, attempt.requestId, costNano),
            attempt.accounts,
          )
        : undefined,
    ),
  );
  return outcomes;
}

async function spent(key: string): Promise<bigint> {
  return BigInt((await redis.hget(key, 'spent')) ?? '-1');
}

/** The credit consumption of the last record settled into an org's usage stream. */
async function lastConsumption(orgId: string) {
  const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
    [string, string[]]
  >;
  return usageRecordFromFields(entries.at(-1)![1]).creditConsumption;
}
/**
 * The keys credits-change.lua takes: a user's USD credits, their account of the period
 * `current` and the one of the period before it (`previousKey`).
 */
const creditKeys = (
  orgId: string,
  userId: string,
  current: Period = period,
  previousKey: string = monthlyPeriod(new Date(current.start.getTime() - 1), null).key,
) => creditsChangeKeys(keys, orgId, userId, { currentKey: current.key, previousKey });

/** Adds a grant of `amount` nano-units, expiring at `expiresAtMs` (in an hour by default). */
const addGrant = (
  credits: ReturnType<typeof creditKeys>,
  grantId: string,
  amount: string,
  expiresAtMs: number = Date.now() + 3_600_000,
) =>
  scripts.creditsChange(credits, {
    action: 'add',
    grant_id: grantId,
    amount_nano: amount,
    expires_at_ms: String(expiresAtMs),
    ttl_ms: '',
    keep_held: '',
  });

/** Revokes a grant, keeping what the user's requests in flight hold (as the product does). */
const revokeGrant = (credits: ReturnType<typeof creditKeys>, grantId: string) =>
  scripts.creditsChange(credits, {
    action: 'remove',
    grant_id: grantId,
    amount_nano: '',
    expires_at_ms: '',
    ttl_ms: '600000',
    keep_held: '1',
  });

/**
 * A product user holding a grant of 30 credits (nano-USD) made through the product; with
 * `anchor`, their allowance period is anchored then.
 */
async function holderWithGrant(label: string, anchor?: Date) {
  const orgId = await createOrganization(db, label);
  const appId = await createApp(db, orgId, `${label}-app`);
  const { user: holder } = await management.upsert({
    orgId,
    appId,
    externalUserId: 'holder',
    ...(anchor && { allowanceStartsAt: anchor }),
  });
  const granted = await management.grantCredits({
    orgId,
    productUserId: holder.id,
    amountNano: 30n,
    currency: 'USD',
    expiresAt: null,
    reason: null,
    idempotencyKey: null,
  });
  if ('keyReused' in granted) throw new Error('a grant without a key cannot reuse one');
  return { orgId, holder, grantId: granted.grant.grant_id };
}

/** The revoking process's clock, `offsetMs` off the gateways' (a spy, undone after the test). */
function skewedClock(offsetMs: number) {
  const realNow = Date.now.bind(Date);
  return vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
}

describe('product-user allowance', () => {
  it('lets exactly K of 200 concurrent requests through a user cap (enforce)', async () => {
    const orgId = uniqueOrg();
    const cost = 1_000n;
    const k = 23;
    const outcomes = await race(200, cost, () =>
      accounts(orgId, { user: user('pu_race', cost * BigInt(k)) }),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'held')).toHaveLength(k);
    expect(new Set(outcomes.filter((o) => o.kind !== 'held').map((o) => o.kind))).toEqual(
      new Set(['allowance_short']),
    );
    expect(await spent(keys.userSpend(orgId, 'pu_race', period.key))).toBe(cost * BigInt(k));
  });

  it('never rejects under track_only or disabled, and still records spend', async () => {
    for (const mode of ['track_only', 'disabled'] as const) {
      const orgId = uniqueOrg();
      const outcomes = await race(20, 1_000n, () =>
        accounts(orgId, { user: user('pu_track', 1_000n, mode) }),
      );
      expect(outcomes.every((outcome) => outcome.kind === 'held')).toBe(true);
      expect(await spent(keys.userSpend(orgId, 'pu_track', period.key))).toBe(20_000n);
    }
  });

  it('spends credits after the base allowance, earliest-expiring grant first; expired grants count for nothing', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_credits';
    const credits = creditKeys(orgId, userId);
    const now = Date.now();
    await addGrant(credits, 'grant_late', '50', now + 86_400_000);
    await addGrant(credits, 'grant_soon', '30', now + 3_600_000);
    await addGrant(credits, 'grant_expired', '1000', now - 1000);
    const account = accounts(orgId, { user: user(userId, 100n) });

    const tooMuch = await store.reserve({
      requestId: newRequestId(),
      accounts: account,
      amountNano: 181n,
    });
    expect(tooMuch).toEqual({
      kind: 'allowance_short',
      capNano: 100n,
      spentNano: 0n,
      baseRemainingNano: 100n,
      creditsNano: 80n,
      availableNano: 180n,
    });

    const requestId = newRequestId();
    expect(await store.reserve({ requestId, accounts: account, amountNano: 180n })).toEqual({
      kind: 'held',
      credentialId: null,
    });
    // While it is held, nothing else fits.
    const squeezed = await store.reserve({
      requestId: newRequestId(),
      accounts: account,
      amountNano: 1n,
    });
    expect(squeezed.kind).toBe('allowance_short');

    expect(await store.settle(record(orgId, requestId, 150n, 180n), account)).toBe('settled');
    expect(await redis.hget(credits.user_credits!, 'g:grant_soon')).toBe('0');
    expect(await redis.hget(credits.user_credits!, 'g:grant_late')).toBe('30');
    expect(await redis.hget(credits.user_credits!, 'g:grant_expired')).toBe('1000');
    // The emptied grant leaves the zset every reserve walks; a stale reload (Postgres not yet
    // told of the consumption) neither refills it nor lists it again.
    expect(await redis.zscore(credits.user_grants!, 'grant_soon')).toBeNull();
    expect(await redis.zscore(credits.user_grants!, 'grant_late')).not.toBeNull();
    await scripts.creditsLoad(
      { user_credits: credits.user_credits!, user_grants: credits.user_grants! },
      { ttl_ms: '60000' },
      ['grant_soon', '30', String(now + 3_600_000), 'grant_late', '50', String(now + 86_400_000)],
    );
    expect(await redis.hmget(credits.user_credits!, 'g:grant_soon', 'g:grant_late')).toEqual([
      '0',
      '30',
    ]);
    expect(await redis.zscore(credits.user_grants!, 'grant_soon')).toBeNull();
    expect(await spent(keys.userSpend(orgId, userId, period.key))).toBe(150n);

    const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
      [string, string[]]
    >;
    const settled = usageRecordFromFields(entries.at(-1)![1]);
    expect(settled.creditsCostNano).toBe(50n);
    expect(settled.creditConsumption).toEqual([
      { grantId: 'grant_soon', amountNano: 30n },
      { grantId: 'grant_late', amountNano: 20n },
    ]);

    // Base allowance is gone (150 ≥ 100); 30 of credits remain.
    const after = await store.reserve({
      requestId: newRequestId(),
      accounts: account,
      amountNano: 31n,
    });
    expect(after).toMatchObject({
      kind: 'allowance_short',
      baseRemainingNano: 0n,
      creditsNano: 30n,
      availableNano: 30n,
    });
  });
});

describe('a grant revoked while requests hold credits', () => {
  it('keeps what they hold, pays after the base allowance and the live grants, and drops the rest once none is in flight', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_in_flight';
    const spendKey = keys.userSpend(orgId, userId, period.key);
    const credits = creditKeys(orgId, userId);
    const now = Date.now();
    for (const [grantId, amount, expiresInMs] of [
      ['grant_revoked', '30', 3_600_000],
      ['grant_live', '50', 86_400_000],
    ] as const) {
      await addGrant(credits, grantId, amount, now + expiresInMs);
    }
    const account = accounts(orgId, { user: user(userId, 0n) });
    const first = newRequestId();
    const second = newRequestId();
    for (const requestId of [first, second]) {
      expect(await store.reserve({ requestId, accounts: account, amountNano: 40n })).toMatchObject({
        kind: 'held',
      });
    }
    await revokeGrant(credits, 'grant_revoked');
    // The revoked grant keeps its 30 for the 80 held, but no new request counts it.
    expect(await redis.hget(credits.user_credits, 'g:grant_revoked')).toBe('30');
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: account, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 50n, availableNano: 0n });

    expect(await store.settle(record(orgId, first, 40n, 40n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_live', amountNano: 40n }]);
    expect(await store.settle(record(orgId, second, 35n, 40n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([
      { grantId: 'grant_live', amountNano: 10n },
      { grantId: 'grant_revoked', amountNano: 25n },
    ]);
    // Nothing in flight: the 5 the revoked grant had left goes with it.
    expect(
      await redis.hmget(credits.user_credits, 'g:grant_revoked', 'g:grant_live', 'draining'),
    ).toEqual([null, '0', null]);
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['75', '0']);
  });

  it('once what it kept is spent, a revoked grant goes though a request it kept money for is still in flight', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_spent';
    const credits = creditKeys(orgId, userId);
    const now = Date.now();
    await addGrant(credits, 'grant_revoked', '30', now + 3_600_000);
    await addGrant(credits, 'grant_live', '20', now + 86_400_000);
    const account = accounts(orgId, { user: user(userId, 0n) });
    const first = newRequestId();
    const second = newRequestId();
    for (const [requestId, amount] of [
      [first, 40n],
      [second, 10n],
    ] as const) {
      expect(
        await store.reserve({ requestId, accounts: account, amountNano: amount }),
      ).toMatchObject({ kind: 'held' });
    }
    await revokeGrant(credits, 'grant_revoked');
    expect(await redis.hget(credits.user_credits, 'holds:grant_revoked')).toBe('2');

    // The first costs all that is left: the live grant's 20, then the revoked grant's 30.
    expect(await store.settle(record(orgId, first, 50n, 40n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([
      { grantId: 'grant_live', amountNano: 20n },
      { grantId: 'grant_revoked', amountNano: 30n },
    ]);
    // Spent: nothing is left to keep for the second, so the grant goes now, not at its lapse.
    expect(
      await redis.hmget(
        credits.user_credits,
        'g:grant_revoked',
        'holds:grant_revoked',
        'until:grant_revoked',
        'draining',
      ),
    ).toEqual([null, null, null, null]);
    expect(await store.settle(record(orgId, second, 10n, 10n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([]);
  });

  it('revoked with nothing in flight, a grant goes at once', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_idle';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_idle', '30', Date.now() + 3_600_000);
    const account = accounts(orgId, { user: user(userId, 0n) });
    const requestId = newRequestId();
    await store.reserve({ requestId, accounts: account, amountNano: 10n });
    expect(await store.settle(record(orgId, requestId, 10n, 10n), account)).toBe('settled');
    await revokeGrant(credits, 'grant_idle');
    expect(await redis.hmget(credits.user_credits, 'g:grant_idle', 'draining')).toEqual([
      null,
      null,
    ]);
  });
  it('pays only the requests in flight at the revocation, not one admitted after it (decision 399)', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_then_admit';
    const spendKey = keys.userSpend(orgId, userId, period.key);
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    const account = accounts(orgId, { user: user(userId, 0n) });
    const givenUp = newRequestId();
    expect(
      await store.reserve({ requestId: givenUp, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    const revokedAtMs = Date.now();
    await revokeGrant(credits, 'grant_revoked');
    // The request it kept 25 for never settles: its reserve was given up on and released.
    await scripts.release(releaseKeys(keys, orgId, spendKey), {
      request_id: givenUp,
      held_nano: '25',
      key_rated: '0',
      user_rated: '0',
    });
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      '25',
      'grant_revoked',
    ]);
    // A request admitted after the revocation, on a new grant, costs more than it held.
    await addGrant(credits, 'grant_new', '20');
    await eventually(async () => (Date.now() > revokedAtMs ? true : undefined));
    const later = newRequestId();
    expect(
      await store.reserve({ requestId: later, accounts: account, amountNano: 20n }),
    ).toMatchObject({ kind: 'held' });
    expect(await store.settle(record(orgId, later, 28n, 20n), account)).toBe('settled');
    // The revoked grant pays none of it (it paid 8 before): it keeps its 25 for the request it
    // was kept for, which will never settle, until that request's hold would have lapsed.
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_new', amountNano: 20n }]);
    expect(
      await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining', 'holds:grant_revoked'),
    ).toEqual(['25', 'grant_revoked', '1']);
    expect(await redis.hget(credits.draining_for, givenUp)).toBe('grant_revoked');
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['28', '0']);
  });

  it('what a revoked grant kept goes once the last hold it was kept for has lapsed (decision 406)', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_lapse';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    const account = accounts(orgId, { user: user(userId, 0n) });
    // A gateway whose holds lapse within a second admits a request on the grant's credits.
    const abandoned = newRequestId();
    expect(
      await shortHolds.reserve({ requestId: abandoned, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    const lapsesAt = Number(await redis.zscore(credits.user_spend_expiries, `${abandoned}:25`));
    const revokedAtMs = Date.now();
    await revokeGrant(credits, 'grant_revoked');
    expect(
      await redis.hmget(credits.user_credits, 'g:grant_revoked', 'until:grant_revoked'),
    ).toEqual(['25', String(lapsesAt)]);
    // Nothing is kept past what the request needs: the names go with the key.
    expect(await redis.pttl(credits.draining_for)).toBeLessThanOrEqual(
      lapsesAt - revokedAtMs + 60_000,
    );
    // The request is abandoned (its instance died): it never settles. Once its hold has lapsed,
    // the next settle of the user drops what the grant kept; that request is not paid by it.
    await eventually(async () => (Date.now() > lapsesAt ? true : undefined));
    await addGrant(credits, 'grant_new', '20');
    const next = newRequestId();
    expect(
      await store.reserve({ requestId: next, accounts: account, amountNano: 20n }),
    ).toMatchObject({ kind: 'held' });
    expect(await store.settle(record(orgId, next, 20n, 20n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_new', amountNano: 20n }]);
    expect(
      await redis.hmget(
        credits.user_credits,
        'g:grant_revoked',
        'draining',
        'holds:grant_revoked',
        'until:grant_revoked',
      ),
    ).toEqual([null, null, null, null]);
  });

  it('pays a request the revocation found holding, though admitted after the revoking clock read (decision 406)', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_behind';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    const account = accounts(orgId, { user: user(userId, 0n) });
    // The revoking process read its clock (or its clock is behind the gateway's) before this
    // request was admitted, and its script ran after: the request holds 25 when it runs (the
    // script reads no clock of the revoking process since decision 562).
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    await revokeGrant(credits, 'grant_revoked');
    expect(await redis.hget(credits.user_credits, 'g:grant_revoked')).toBe('25');
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    // It was admitted on the grant's credits, which were kept for it: they pay it.
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_revoked', amountNano: 25n }]);
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      null,
      null,
    ]);
    expect(await redis.exists(credits.draining_for)).toBe(0);
  });

  it('revoked twice (its script sent again after a lost reply), keeps and pays as once: never a request admitted after the first (decision 448)', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_twice';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    const account = accounts(orgId, { user: user(userId, 0n) });
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 20n }),
    ).toMatchObject({ kind: 'held' });
    await revokeGrant(credits, 'grant_revoked');
    // Admitted after the revocation, on a new grant.
    await addGrant(credits, 'grant_live', '30');
    const later = newRequestId();
    expect(
      await store.reserve({ requestId: later, accounts: account, amountNano: 10n }),
    ).toMatchObject({ kind: 'held' });
    // The same revocation again: what a client that resends an unanswered command does.
    await revokeGrant(credits, 'grant_revoked');
    expect(
      await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining', 'holds:grant_revoked'),
    ).toEqual(['20', 'grant_revoked', '1']);
    expect(await redis.hget(credits.draining_for, later)).toBeNull();
    // The later request costs more than it held: the revoked grant pays none of it.
    expect(await store.settle(record(orgId, later, 45n, 10n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_live', amountNano: 30n }]);
    // The one it was kept for: at most the 20 kept, once.
    expect(await store.settle(record(orgId, inFlight, 50n, 20n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_revoked', amountNano: 20n }]);
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      null,
      null,
    ]);
  });

  it('requests of both sides of a period turn are each paid what was kept for them (decision 406)', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_both_sides';
    const next = monthlyPeriod(period.end, null);
    // The grant is revoked in the next period: one request admitted before the turn holds on
    // this period's account, one admitted after it on the next one's.
    const credits = creditKeys(orgId, userId, next, period.key);
    await addGrant(credits, 'grant_revoked', '40');
    const older = accounts(orgId, { user: user(userId, 0n) });
    const newer = accounts(orgId, { user: { ...user(userId, 0n), period: next } });
    const [first, second] = [newRequestId(), newRequestId()];
    for (const [requestId, account] of [
      [first, older],
      [second, newer],
    ] as const) {
      expect(await store.reserve({ requestId, accounts: account, amountNano: 20n })).toMatchObject({
        kind: 'held',
      });
    }
    await revokeGrant(credits, 'grant_revoked');
    expect(await redis.hget(credits.user_credits, 'g:grant_revoked')).toBe('40');
    // The older one settles first, its own period's account then holding nothing: what was kept
    // for the newer one stays for it.
    expect(await store.settle(record(orgId, first, 20n, 20n), older)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_revoked', amountNano: 20n }]);
    expect(
      await redis.hmget(credits.user_credits, 'g:grant_revoked', 'holds:grant_revoked'),
    ).toEqual(['20', '1']);
    expect(await store.settle(record(orgId, second, 20n, 20n), newer)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_revoked', amountNano: 20n }]);
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      null,
      null,
    ]);
  });
  it('a revocation after the period turned keeps what a request of the ended period holds', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_revoke_at_turn';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    // Admitted in this period on the grant's credits (no base allowance): holds 25 on this
    // period's account.
    const account = accounts(orgId, { user: user(userId, 0n) });
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    // The period turns; the grant is revoked in the next one (the product revokes against the
    // account of the period current at the revocation).
    const next = monthlyPeriod(period.end, null);
    await revokeGrant(creditKeys(orgId, userId, next), 'grant_revoked');
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    // docs/charging.md: a revoke never leaves a request admitted on the grant's credits unfunded
    // (decision 404: it kept nothing, the account it read being the new period's).
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_revoked', amountNano: 25n }]);
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      null,
      null,
    ]);
  });

  it('a revocation through the product keeps what a request of the period before holds', async () => {
    // The user's allowance period turned a minute ago (anchored then), so the request below,
    // admitted just before, holds on the period before the one current at the revocation.
    const anchor = new Date(Date.now() - 60_000);
    const { orgId, holder, grantId } = await holderWithGrant('revoke-at-turn', anchor);
    const before = monthlyPeriod(new Date(anchor.getTime() - 1), anchor);
    expect(before.end).toEqual(anchor);
    const account = accounts(orgId, { user: { ...user(holder.id, 0n), period: before } });
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    expect(await management.revokeGrant(grantId, { userId: 'usr_admin' }, orgId)).toMatchObject({
      status: 'revoked',
    });
    const credits = keys.userCredits(orgId, holder.id, 'USD');
    expect(await redis.hmget(credits, `g:${grantId}`, 'draining')).toEqual(['25', grantId]);
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId, amountNano: 25n }]);
    expect(await redis.hmget(credits, `g:${grantId}`, 'draining')).toEqual([null, null]);
  });
});

describe("a revocation run on a host whose clock is ahead of the gateways'", () => {
  it('releases no hold of a request still running, and the grant pays it what it kept', async () => {
    const { orgId, holder, grantId } = await holderWithGrant('revoke-clock-ahead');
    const account = accounts(orgId, { user: user(holder.id, 0n) });
    const spendKey = keys.userSpend(orgId, holder.id, period.key);
    // A gateway admits a request on the grant's credits: its hold lapses in a minute unless
    // renewed (every 20 s while it runs).
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    // The operator's CLI revokes the grant from a host whose clock is five minutes ahead.
    const clock = skewedClock(+5 * 60_000);
    try {
      expect(await management.revokeGrant(grantId, CLI_ACTOR, null)).toMatchObject({
        status: 'revoked',
      });
    } finally {
      clock.mockRestore();
    }
    // The request still holds its 25, and the grant keeps them for it.
    expect(await redis.hget(spendKey, 'reserved')).toBe('25');
    expect(await redis.zscore(keys.holdExpiries(spendKey), `${inFlight}:25`)).not.toBeNull();
    const credits = keys.userCredits(orgId, holder.id, 'USD');
    expect(await redis.hmget(credits, `g:${grantId}`, 'draining')).toEqual(['25', grantId]);
    expect(await redis.hget(keys.userDrainingFor(orgId, holder.id, 'USD'), inFlight)).toBe(grantId);
    // It settles (its cap is 0): the grant it was admitted on pays it.
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId, amountNano: 25n }]);
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['25', '0']);
  });
});

describe("a revocation run on a host whose clock is behind the gateways'", () => {
  it("just after the user's period turned, keeps what a request of the new period holds", async () => {
    // The user's allowance period turned a minute ago (anchored then): the gateways admit on
    // the new period's account.
    const anchor = new Date(Date.now() - 60_000);
    const { orgId, holder, grantId } = await holderWithGrant('revoke-clock-behind', anchor);
    const current = monthlyPeriod(new Date(), anchor);
    expect(current.start).toEqual(anchor);
    const account = accounts(orgId, { user: { ...user(holder.id, 0n), period: current } });
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    // The operator's CLI, on a host whose clock is five minutes behind (still in the period
    // before), revokes the grant.
    const clock = skewedClock(-5 * 60_000);
    try {
      expect(await management.revokeGrant(grantId, CLI_ACTOR, null)).toMatchObject({
        status: 'revoked',
      });
    } finally {
      clock.mockRestore();
    }
    const credits = keys.userCredits(orgId, holder.id, 'USD');
    expect(await redis.hmget(credits, `g:${grantId}`, 'draining')).toEqual(['25', grantId]);
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId, amountNano: 25n }]);
  });
});

describe('credits reloaded from Postgres while a grant drains', () => {
  it('a reload merges into what is there: the revoked grant keeps what it kept and pays', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_reload_draining';
    const credits = creditKeys(orgId, userId);
    await addGrant(credits, 'grant_revoked', '30');
    const account = accounts(orgId, { user: user(userId, 0n) });
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: account, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    await revokeGrant(credits, 'grant_revoked');
    // The first request of the next period reloads the user's account and credits from
    // Postgres (which has no active grant of this user), while the first request is in flight.
    const next = monthlyPeriod(period.end, null);
    const nextAccount = accounts(orgId, { user: { ...user(userId, 0n), period: next } });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: nextAccount, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 0n });
    expect(await redis.exists(keys.userSpend(orgId, userId, next.key))).toBe(1);
    expect(await redis.hmget(credits.user_credits, 'g:grant_revoked', 'draining')).toEqual([
      '25',
      'grant_revoked',
    ]);
    expect(await store.settle(record(orgId, inFlight, 25n, 25n), account)).toBe('settled');
    const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
      [string, string[]]
    >;
    expect(usageRecordFromFields(entries.at(-1)![1]).creditConsumption).toEqual([
      { grantId: 'grant_revoked', amountNano: 25n },
    ]);
  });

  it('the credits loaded with a period account outlive it: they never expire under a request', async () => {
    // The worst case: a 31-day period whose account is loaded at its very start.
    const orgId = uniqueOrg();
    const userId = 'pu_credits_ttl';
    const start = Date.now();
    const longest = {
      start: new Date(start),
      end: new Date(start + 31 * 86_400_000),
      key: String(start),
    };
    const credits = creditKeys(orgId, userId, longest);
    await addGrant(credits, 'grant_a', '10');
    const account = accounts(orgId, { user: { ...user(userId, 0n), period: longest } });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: account, amountNano: 1n }),
    ).toMatchObject({ kind: 'held' });
    const spendTtl = await redis.pttl(credits.user_spend);
    expect(spendTtl).toBeGreaterThan(37 * 86_400_000);
    expect(await redis.pttl(credits.user_credits)).toBeGreaterThan(spendTtl + 86_400_000);
    expect(await redis.pttl(credits.user_grants)).toBeGreaterThan(spendTtl + 86_400_000);
  });
});

describe('a grant that expires while requests hold credits', () => {
  it('pays the requests admitted before its expiry, earliest expiry first, and none admitted after', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_expire_in_flight';
    const spendKey = keys.userSpend(orgId, userId, period.key);
    const credits = creditKeys(orgId, userId);
    // 3 s: the first request must be admitted before the expiry, even on a loaded machine
    const expiresAtMs = Date.now() + 3_000;
    for (const [grantId, amount, expiry] of [
      ['grant_expiring', '30', expiresAtMs],
      ['grant_live', '50', expiresAtMs + 86_400_000],
    ] as const) {
      await addGrant(credits, grantId, amount, expiry);
    }
    const account = accounts(orgId, { user: user(userId, 0n) });
    const before = newRequestId();
    // Its record is dated at its admission, as every record is (decision 402).
    const beforeAdmittedAt = new Date();
    expect(
      await store.reserve({ requestId: before, accounts: account, amountNano: 40n }),
    ).toMatchObject({ kind: 'held' });
    expect(Date.now()).toBeLessThan(expiresAtMs);
    while (Date.now() <= expiresAtMs) await new Promise((resolve) => setTimeout(resolve, 50));

    // Expired, the grant counts for no new request: 50 live, 40 of it held.
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: account, amountNano: 11n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 50n, availableNano: 10n });
    const after = newRequestId();
    expect(
      await store.reserve({ requestId: after, accounts: account, amountNano: 10n }),
    ).toMatchObject({ kind: 'held' });

    // Admitted after the expiry: the live grant pays, though the expired one has 30 left.
    expect(await store.settle(record(orgId, after, 10n, 10n), account)).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([{ grantId: 'grant_live', amountNano: 10n }]);
    // Admitted before it: paid as it would have been then, the expiring grant first.
    expect(
      await store.settle(
        { ...record(orgId, before, 40n, 40n), createdAt: beforeAdmittedAt },
        account,
      ),
    ).toBe('settled');
    expect(await lastConsumption(orgId)).toEqual([
      { grantId: 'grant_expiring', amountNano: 30n },
      { grantId: 'grant_live', amountNano: 10n },
    ]);
    expect(await redis.hmget(credits.user_credits, 'g:grant_expiring', 'g:grant_live')).toEqual([
      '0',
      '30',
    ]);
    expect(await redis.hmget(spendKey, 'spent', 'reserved')).toEqual(['50', '0']);
  });
});

describe("credits held by a request of the period before (the user's period turned in flight)", () => {
  const next = monthlyPeriod(period.end, null);
  /** Every credit a user's settled records drew, in the order they settled. */
  async function creditsDrawn(orgId: string): Promise<bigint> {
    const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
      [string, string[]]
    >;
    return entries
      .map(([, fields]) => usageRecordFromFields(fields).creditConsumption ?? [])
      .flat()
      .reduce((sum, part) => sum + part.amountNano, 0n);
  }

  it('are not spent again by the next period: exactly what is left passes, and every request is funded', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_turn_credits';
    await addGrant(creditKeys(orgId, userId, next, period.key), 'grant_turn', '100');
    // No base allowance: credits pay everything. Five requests admitted before the turn hold
    // 50 of the 100 on the ended period's account.
    const older = accounts(orgId, { user: user(userId, 0n) });
    const newer = accounts(orgId, { user: { ...user(userId, 0n), period: next } });
    const olderIds = Array.from({ length: 5 }, () => newRequestId());
    for (const requestId of olderIds) {
      expect(await store.reserve({ requestId, accounts: older, amountNano: 10n })).toMatchObject({
        kind: 'held',
      });
    }
    // After the turn, 20 at once: the 50 left pass, not the 100 the grant still has.
    const newerIds = Array.from({ length: 20 }, () => newRequestId());
    const outcomes = await Promise.all(
      newerIds.map((requestId) => store.reserve({ requestId, accounts: newer, amountNano: 10n })),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'held')).toHaveLength(5);
    expect(outcomes.find((outcome) => outcome.kind !== 'held')).toMatchObject({
      kind: 'allowance_short',
      creditsNano: 100n,
      availableNano: 0n,
    });
    // Settled in any order, the grant pays every one of them in full.
    const held = newerIds.filter((_, index) => outcomes[index]!.kind === 'held');
    await Promise.all([
      ...held.map((requestId) => store.settle(record(orgId, requestId, 10n, 10n), newer)),
      ...olderIds.map((requestId) => store.settle(record(orgId, requestId, 10n, 10n), older)),
    ]);
    expect(await creditsDrawn(orgId)).toBe(100n);
    expect(await redis.hget(keys.userCredits(orgId, userId, 'USD'), 'g:grant_turn')).toBe('0');
    expect(await redis.hmget(keys.userSpend(orgId, userId, next.key), 'spent', 'reserved')).toEqual(
      ['50', '0'],
    );
  });

  it("count only past what the ended period's base allowance still covers", async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_turn_base';
    await addGrant(creditKeys(orgId, userId, next, period.key), 'grant_turn', '25');
    const older = accounts(orgId, { user: user(userId, 30n) });
    const newer = accounts(orgId, { user: { ...user(userId, 30n), period: next } });
    // The ended period: 20 of its 30 spent, 25 in flight (10 of it on its base, 15 on credits).
    const spentFirst = newRequestId();
    await store.reserve({ requestId: spentFirst, accounts: older, amountNano: 20n });
    await store.settle(record(orgId, spentFirst, 20n, 20n), older);
    const inFlight = newRequestId();
    expect(
      await store.reserve({ requestId: inFlight, accounts: older, amountNano: 25n }),
    ).toMatchObject({ kind: 'held' });
    // The next period: its own 30, and the 10 of the credits the ended period does not need.
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: newer, amountNano: 41n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 25n, availableNano: 40n });
    const newest = newRequestId();
    expect(
      await store.reserve({ requestId: newest, accounts: newer, amountNano: 40n }),
    ).toMatchObject({ kind: 'held' });
    await store.settle(record(orgId, inFlight, 25n, 25n), older);
    await store.settle(record(orgId, newest, 40n, 40n), newer);
    // 15 for the request of the ended period, 10 for the newest: 25, all of it, none short.
    expect(await creditsDrawn(orgId)).toBe(25n);
    expect(
      await redis.hmget(keys.userSpend(orgId, userId, period.key), 'spent', 'reserved'),
    ).toEqual(['45', '0']);
  });

  it('a lapsed hold of the ended period keeps nothing from the next one', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_turn_lapsed';
    await addGrant(creditKeys(orgId, userId, next, period.key), 'grant_turn', '30');
    const older = accounts(orgId, { user: user(userId, 0n) });
    const newer = accounts(orgId, { user: { ...user(userId, 0n), period: next } });
    // Held by an instance that died: its hold lapses within a second.
    expect(
      await shortHolds.reserve({ requestId: newRequestId(), accounts: older, amountNano: 30n }),
    ).toMatchObject({ kind: 'held' });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts: newer, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', availableNano: 0n });
    // Once it has lapsed, the whole grant is the next period's again.
    await eventually(async () => {
      const outcome = await store.reserve({
        requestId: newRequestId(),
        accounts: newer,
        amountNano: 30n,
      });
      return outcome.kind === 'held' ? outcome : undefined;
    });
    expect(await redis.hget(keys.userSpend(orgId, userId, period.key), 'reserved')).toBe('0');
  });
});

describe('org and app-connection caps', () => {
  it('lets exactly K of 200 concurrent requests from many users through an org cap', async () => {
    const orgId = uniqueOrg();
    const outcomes = await race(200, 500n, (index) =>
      accounts(orgId, { orgCap: { capNano: 500n * 17n, period }, user: user(`pu_${index}`, null) }),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'held')).toHaveLength(17);
    const refused = outcomes.find((outcome) => outcome.kind !== 'held');
    expect(refused).toMatchObject({ kind: 'cap_exceeded', scope: 'org', capNano: 8_500n });
    expect(await spent(keys.orgCap(orgId, period.key))).toBe(8_500n);
  });

  it('applies an app-connection cap to the connection combined', async () => {
    const orgId = uniqueOrg();
    const outcomes = await race(200, 700n, (index) =>
      accounts(orgId, {
        connectionCap: { capNano: 700n * 31n + 699n, period },
        user: user(`pu_${index % 50}`, 10n ** 9n),
      }),
    );
    expect(outcomes.filter((outcome) => outcome.kind === 'held')).toHaveLength(31);
    expect(outcomes.find((outcome) => outcome.kind !== 'held')).toMatchObject({
      kind: 'cap_exceeded',
      scope: 'app_connection',
    });
    expect(await spent(keys.connectionCap(orgId, 'conn_a', period.key))).toBe(700n * 31n);
  });

  it('places no hold anywhere when one account refuses', async () => {
    const orgId = uniqueOrg();
    const account = accounts(orgId, {
      orgCap: { capNano: 10_000n, period },
      connectionCap: { capNano: 10_000n, period },
      user: user('pu_atomic', 100n),
    });
    expect(
      (await store.reserve({ requestId: newRequestId(), accounts: account, amountNano: 500n }))
        .kind,
    ).toBe('allowance_short');
    expect(await redis.hget(keys.orgCap(orgId, period.key), 'reserved')).toBe('0');
    expect(await redis.hget(keys.connectionCap(orgId, 'conn_a', period.key), 'reserved')).toBe('0');
    expect(await redis.hget(keys.userSpend(orgId, 'pu_atomic', period.key), 'reserved')).toBe('0');
  });
});
