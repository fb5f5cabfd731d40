// A request that runs longer than RESERVATION_TTL_MS keeps its holds (hold-renew.lua, through
// BudgetStore.keepHeld): on every account it holds on, until it settles; a renewal never brings
// back a hold that is gone; and the grants live at its admission still pay it, though its hold
// on the user's account has been moved on since (settle.lua reads the admission off its
// record, decision 498). Holds lapse after 600 ms here.
import { afterAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import { decodeDraft } from '../src/billing/in-flight-draft.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { usageRecordFromFields } from '../src/ledger/usage-record.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { creditsChangeKeys } from './support/credits-change-keys.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { lostRecord, usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('renew');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const HOLD_TTL_MS = 600;
const { budget: store } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: HOLD_TTL_MS,
});
const period = monthlyPeriod(new Date(), null);
let sequence = 0;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function uniqueOrg(): string {
  sequence += 1;
  return `org_renew_${Date.now()}_${sequence}`;
}

/** An org cap and a product user under an enforced cap: the request holds on both. */
function capped(orgId: string, userId: string): RequestAccounts {
  return {
    orgId,
    appConnectionId: 'conn_a',
    orgCap: { capNano: 100n, period },
    connectionCap: null,
    user: { productUserId: userId, capNano: 0n, creditMode: 'enforce', period },
    walletPays: false,
    credentials: null,
  };
}

async function addGrant(
  orgId: string,
  userId: string,
  grantId: string,
  amount: string,
  expiresAtMs: number,
) {
  await scripts.creditsChange(creditsChangeKeys(keys, orgId, userId, { currentKey: period.key }), {
    action: 'add',
    grant_id: grantId,
    amount_nano: amount,
    expires_at_ms: String(expiresAtMs),
    ttl_ms: '',
    keep_held: '',
  });
}

describe('a request that runs longer than its holds would last', () => {
  it('keeps every hold until it settles; once stopped, they lapse as before', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_long';
    await addGrant(orgId, userId, 'grant_a', '100', Date.now() + 3_600_000);
    const accounts = capped(orgId, userId);
    const requestId = newRequestId();
    const lost = lostRecord(orgId, { requestId, appConnectionId: 'conn_a', productUserId: userId });
    expect(
      await store.reserve({ requestId, accounts, amountNano: 60n, lostRecord: lost }),
    ).toMatchObject({ kind: 'held' });
    const draftLapse = async () => {
      const entry = (await redis.hget(keys.inFlight(orgId), requestId))!;
      return decodeDraft(entry.slice(entry.indexOf('\n') + 1)).lapsesAtMs;
    };
    const firstLapse = await draftLapse();
    const stop = store.keepHeld({ requestId, accounts, amountNano: 60n });
    await sleep(HOLD_TTL_MS * 3);
    // Its draft lapses with its holds: the lost-request sweep leaves a running request alone.
    expect(await draftLapse()).toBeGreaterThan(firstLapse + HOLD_TTL_MS);
    // Past three of its lapses: the org cap and the user's credits still hold its 60.
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 41n }),
    ).toMatchObject({ kind: 'cap_exceeded', scope: 'org', reservedNano: 60n });
    const user = keys.userSpend(orgId, userId, period.key);
    expect(await redis.hget(user, 'reserved')).toBe('60');
    expect(
      await store.settle(
        usageRecord(orgId, 50n, {
          requestId,
          appConnectionId: 'conn_a',
          productUserId: userId,
          reservedNano: 60n,
        }),
        accounts,
      ),
    ).toBe('settled');
    stop();
    expect(await redis.hmget(user, 'spent', 'reserved')).toEqual(['50', '0']);
    expect(await redis.hmget(keys.orgCap(orgId, period.key), 'spent', 'reserved')).toEqual([
      '50',
      '0',
    ]);

    // Not kept: its hold lapses as a dead instance's does.
    const abandoned = newRequestId();
    await store.reserve({ requestId: abandoned, accounts, amountNano: 50n });
    await sleep(HOLD_TTL_MS * 2);
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 50n }),
    ).toMatchObject({ kind: 'held' });
  });

  it('a renewal brings back no hold that settled or lapsed', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_renew_gone';
    await addGrant(orgId, userId, 'grant_a', '100', Date.now() + 3_600_000);
    const accounts = capped(orgId, userId);
    const requestId = newRequestId();
    await store.reserve({ requestId, accounts, amountNano: 30n });
    await store.settle(
      usageRecord(orgId, 30n, {
        requestId,
        appConnectionId: 'conn_a',
        productUserId: userId,
        reservedNano: 30n,
      }),
      accounts,
    );
    const user = keys.userSpend(orgId, userId, period.key);
    const renewKeys = {
      wallet_expiries: keys.holdExpiries(keys.wallet(orgId)),
      org_cap_expiries: keys.holdExpiries(keys.orgCap(orgId, period.key)),
      conn_cap_expiries: keys.holdExpiries(keys.orgCap(orgId, 'unused')),
      user_spend_expiries: keys.holdExpiries(user),
      in_flight: keys.inFlight(orgId),
      user_credits: keys.userCredits(orgId, userId, 'USD'),
      draining_for: keys.userDrainingFor(orgId, userId, 'USD'),
    };
    const renew = { request_id: requestId, held_nano: '30', expires_at_ms: Date.now() + 60_000 };
    expect(await scripts.holdRenew(renewKeys, renew)).toBe(0);
    expect(await redis.zcard(keys.holdExpiries(user))).toBe(0);
    expect(await redis.hget(user, 'reserved')).toBe('0');
    // A renewal Redis runs late never brings a lapse forward.
    const held = newRequestId();
    await store.reserve({ requestId: held, accounts, amountNano: 20n });
    const lapse = await redis.zscore(keys.holdExpiries(user), `${held}:20`);
    expect(
      await scripts.holdRenew(renewKeys, { request_id: held, held_nano: '20', expires_at_ms: 1 }),
    ).toBe(0);
    expect(await redis.zscore(keys.holdExpiries(user), `${held}:20`)).toBe(lapse);
  });

  it('is paid by the grants live at its admission, though its hold was moved on since', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_renew_expiry';
    const expiresAtMs = Date.now() + HOLD_TTL_MS * 2;
    await addGrant(orgId, userId, 'grant_expiring', '30', expiresAtMs);
    await addGrant(orgId, userId, 'grant_live', '50', expiresAtMs + 86_400_000);
    const accounts = capped(orgId, userId);
    const requestId = newRequestId();
    const admittedAt = new Date();
    expect(await store.reserve({ requestId, accounts, amountNano: 40n })).toMatchObject({
      kind: 'held',
    });
    const stop = store.keepHeld({ requestId, accounts, amountNano: 40n });
    while (Date.now() <= expiresAtMs + HOLD_TTL_MS) await sleep(50);
    expect(
      await store.settle(
        usageRecord(orgId, 40n, {
          requestId,
          createdAt: admittedAt,
          appConnectionId: 'conn_a',
          productUserId: userId,
          reservedNano: 40n,
        }),
        accounts,
      ),
    ).toBe('settled');
    stop();
    const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
      [string, string[]]
    >;
    // Admitted before the expiry: the expiring grant first, as had it settled at once.
    expect(usageRecordFromFields(entries.at(-1)![1]).creditConsumption).toEqual([
      { grantId: 'grant_expiring', amountNano: 30n },
      { grantId: 'grant_live', amountNano: 10n },
    ]);
  });
});

describe('a request kept running past a revocation that kept money for it', () => {
  it('is paid by the revoked grant, though it settles after its holds would have lapsed', async () => {
    const orgId = uniqueOrg();
    const userId = 'pu_renew_revoked';
    await addGrant(orgId, userId, 'grant_revoked', '100', Date.now() + 3_600_000);
    const accounts = capped(orgId, userId);
    const requestId = newRequestId();
    expect(await store.reserve({ requestId, accounts, amountNano: 60n })).toMatchObject({
      kind: 'held',
    });
    const stop = store.keepHeld({ requestId, accounts, amountNano: 60n });
    // Revoked while the request runs: the grant keeps the 60 it holds, for that request.
    await scripts.creditsChange(
      creditsChangeKeys(keys, orgId, userId, { currentKey: period.key }),
      {
        action: 'remove',
        grant_id: 'grant_revoked',
        amount_nano: '',
        expires_at_ms: '',
        ttl_ms: '3600000',
        keep_held: '1',
      },
    );
    const credits = keys.userCredits(orgId, userId, 'USD');
    expect(await redis.hget(credits, 'g:grant_revoked')).toBe('60');
    // Three of its lapses later, still running (its holds kept), it settles.
    await sleep(HOLD_TTL_MS * 3);
    expect(
      await store.settle(
        usageRecord(orgId, 50n, {
          requestId,
          appConnectionId: 'conn_a',
          productUserId: userId,
          reservedNano: 60n,
        }),
        accounts,
      ),
    ).toBe('settled');
    stop();
    const entries = (await redis.xrange(keys.usageStream(orgId), '-', '+')) as Array<
      [string, string[]]
    >;
    // The grant kept its money for this request: it pays the 50 the cap of 0 cannot.
    const record = usageRecordFromFields(entries.at(-1)![1]);
    expect(record.creditConsumption).toEqual([{ grantId: 'grant_revoked', amountNano: 50n }]);
    expect(record.creditsCostNano).toBe(50n);
    // Every request it kept money for has settled: what it kept is gone.
    expect(await redis.hget(credits, 'g:grant_revoked')).toBeNull();
    expect(await redis.hget(credits, 'draining')).toBeNull();
  });
});
