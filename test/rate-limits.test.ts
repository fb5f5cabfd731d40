// Request-rate limits in reserve.lua (GCRA, docs/decisions.md 344) against the real Redis,
// time driven through the script's now_ms: bursts up to the limit, then the limit a minute,
// exactly (7 a minute included); the wait it answers; the bucket's expiry; and an arrival
// recorded only when the request is held. Runs on the Redis Cluster too (vitest.config.ts).
import { afterAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('rate');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

let counter = 0;
const uniqueOrg = (): string => `org_rate_${Date.now()}_${(counter += 1)}`;
const KEY_ID = 'key_rate';
const T0 = 1_800_000_000_000;

async function fundedOrg(balanceNano = 1_000_000_000n): Promise<string> {
  const orgId = uniqueOrg();
  const wallet = keys.wallet(orgId);
  await scripts.accountLoad(
    { account: wallet, expiries: keys.holdExpiries(wallet) },
    { field: 'balance', amount_nano: balanceNano.toString(), expire_at_ms: '' },
  );
  return orgId;
}

/** A product user's (uncapped, track_only) spend account, loaded. */
async function loadUser(orgId: string, userId: string): Promise<void> {
  const account = keys.userSpend(orgId, userId, 'p');
  await scripts.accountLoad(
    { account, expiries: keys.holdExpiries(account) },
    { field: 'spent', amount_nano: '0', expire_at_ms: String(T0 + 86_400_000) },
  );
}

interface Call {
  readonly at: number;
  readonly keyRpm?: number | string;
  readonly userRpm?: number | string;
  readonly user?: string;
  readonly requestId?: string;
  readonly amountNano?: bigint;
  readonly draft?: string;
}

/**
 * The keys reserve.lua and release.lua share for `orgId`: the wallet and no caps (an unused
 * key stands in), the product user's spend and rate bucket when `user` is named, the key's.
 */
function holdKeys(orgId: string, user: string | undefined) {
  const unused = keys.orgCap(orgId, 'unused');
  const userSpend = user ? keys.userSpend(orgId, user, 'p') : unused;
  return {
    unused,
    shared: {
      wallet: keys.wallet(orgId),
      wallet_expiries: keys.holdExpiries(keys.wallet(orgId)),
      org_cap: unused,
      org_cap_expiries: keys.holdExpiries(unused),
      conn_cap: unused,
      conn_cap_expiries: keys.holdExpiries(unused),
      user_spend: userSpend,
      user_spend_expiries: keys.holdExpiries(userSpend),
      in_flight: keys.inFlight(orgId),
      key_rate: keys.keyRate(orgId, KEY_ID),
      user_rate: user ? keys.productUserRate(orgId, KEY_ID, user) : unused,
    },
  };
}

/** reserve.lua for `orgId` at time `call.at`, called as the budget store calls it. */
async function reserveAt(orgId: string, call: Call): Promise<unknown[]> {
  const { unused, shared } = holdKeys(orgId, call.user);
  return (await scripts.reserve(
    {
      ...shared,
      user_credits: unused,
      user_grants: unused,
      cred_cooldowns: keys.credentialCooldowns(orgId),
      cred_rotation: keys.credentialRotation(orgId),
      previous_spend: unused,
      previous_spend_expiries: keys.holdExpiries(unused),
    },
    {
      request_id: call.requestId ?? newRequestId(),
      amount_nano: (call.amountNano ?? 1000n).toString(),
      now_ms: call.at,
      expires_at_ms: call.at + 60_000,
      wallet_pays: '1',
      org_cap_nano: '',
      conn_cap_nano: '',
      user_cap_nano: '',
      user_mode: call.user ? 'track_only' : 'none',
      credentials: '',
      byok_only: '0',
      draft: call.draft ?? 'draft',
      key_rpm: call.keyRpm ?? '',
      user_rpm: call.userRpm ?? '',
    },
  )) as unknown[];
}

const HELD = [0, ''];
/** Held, with what the tighter bucket tells the client (decision 353). */
const held = (limit: number, remaining: number, resetMs: number) => [
  0,
  '',
  limit,
  remaining,
  resetMs,
];
const walletReserved = async (orgId: string): Promise<string | null> =>
  redis.hget(keys.wallet(orgId), 'reserved');

describe('a key limit of R requests per minute (GCRA)', () => {
  it('passes a burst of R, refuses the next with the exact wait, and stores the arrival time with its expiry', async () => {
    const orgId = await fundedOrg();
    // each answers the requests left and the ms until the bucket is full again
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual(held(3, 2, 20_000));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual(held(3, 1, 40_000));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual(held(3, 0, 60_000));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual([6, 'key', 3, 20_000, 60_000]);
    expect(await reserveAt(orgId, { at: T0 + 19_999, keyRpm: 3 })).toEqual([
      6,
      'key',
      3,
      1,
      40_001,
    ]);
    // Refusals held nothing: three holds of 1000 nano-units.
    expect(await walletReserved(orgId)).toBe('3000');
    // TAT: a full minute ahead of T0 (three requests of 20 s each), expiring then.
    const bucket = keys.keyRate(orgId, KEY_ID);
    expect(await redis.get(bucket)).toBe(`${T0 + 60_000}:0:3`);
    const ttl = await redis.pttl(bucket);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    expect(await reserveAt(orgId, { at: T0 + 20_000, keyRpm: 3 })).toEqual(held(3, 0, 60_000));
    expect(await reserveAt(orgId, { at: T0 + 20_000, keyRpm: 3 })).toEqual([
      6,
      'key',
      3,
      20_000,
      60_000,
    ]);
    // After a quiet minute the whole burst is back.
    for (const remaining of [2, 1, 0]) {
      expect(await reserveAt(orgId, { at: T0 + 80_000, keyRpm: 3 })).toEqual(
        held(3, remaining, (3 - remaining) * 20_000),
      );
    }
    expect((await reserveAt(orgId, { at: T0 + 80_000, keyRpm: 3 })).slice(0, 4)).toEqual([
      6,
      'key',
      3,
      20_000,
    ]);
  });

  it('7 a minute: the k-th request after a burst passes at exactly ceil(k·60000/7) ms, for ten minutes, without drift', async () => {
    const orgId = await fundedOrg();
    for (let index = 0; index < 7; index += 1) {
      expect((await reserveAt(orgId, { at: T0, keyRpm: 7 })).slice(0, 4)).toEqual([
        0,
        '',
        7,
        6 - index,
      ]);
    }
    // 60000/7 = 8571.43 ms: the 8th waits 8572 ms (rounded up to whole ms).
    expect(await reserveAt(orgId, { at: T0, keyRpm: 7 })).toEqual([6, 'key', 7, 8572, 60_000]);
    for (let k = 1; k <= 70; k += 1) {
      const due = T0 + Math.ceil((k * 60_000) / 7);
      const early = await reserveAt(orgId, { at: due - 1, keyRpm: 7 });
      expect(early.slice(0, 3)).toEqual([6, 'key', 7]);
      expect(early[3]).toBe(1);
      expect((await reserveAt(orgId, { at: due, keyRpm: 7 })).slice(0, 4)).toEqual([0, '', 7, 0]);
    }
  });

  it('a limit of 1: one request, then one a minute', async () => {
    const orgId = await fundedOrg();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 1 })).toEqual(held(1, 0, 60_000));
    expect(await reserveAt(orgId, { at: T0 + 1, keyRpm: 1 })).toEqual([
      6,
      'key',
      1,
      59_999,
      59_999,
    ]);
    expect(await reserveAt(orgId, { at: T0 + 60_000, keyRpm: 1 })).toEqual(held(1, 0, 60_000));
  });

  it('a changed limit reads the stored arrival time in whole ms', async () => {
    const orgId = await fundedOrg();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 7 })).toEqual(held(7, 6, 8572));
    // TAT T0 + 8571 3/7 ms, rounded up to T0 + 8572 under another limit: the bucket of 3 (20 s
    // a request) has 60 − 8.572 s of room: two more pass, the next waits 8.572 s.
    expect(await redis.get(keys.keyRate(orgId, KEY_ID))).toBe(`${T0 + 8571}:3:7`);
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual(held(3, 1, 28_572));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual(held(3, 0, 48_572));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3 })).toEqual([6, 'key', 3, 8572, 48_572]);
  });

  it('refuses a limit out of range, writing nothing', async () => {
    const orgId = await fundedOrg();
    for (const keyRpm of ['0', '1000001', '-1', '1.5', 'x']) {
      await expect(reserveAt(orgId, { at: T0, keyRpm })).rejects.toThrow(
        /gw_invalid_argument: key_rpm/,
      );
    }
    await expect(reserveAt(orgId, { at: T0, userRpm: '0', user: 'pu_x' })).rejects.toThrow(
      /gw_invalid_argument: user_rpm/,
    );
    expect(await redis.exists(keys.keyRate(orgId, KEY_ID))).toBe(0);
    expect(await walletReserved(orgId)).toBe('0');
  });
});

describe('an arrival is recorded only when the request is held', () => {
  it('a request refused for money, or told to load its accounts first, does not use up the rate', async () => {
    const orgId = await fundedOrg(1500n);
    expect(await reserveAt(orgId, { at: T0, keyRpm: 1, amountNano: 2000n })).toEqual([2, '1500']);
    expect(await redis.exists(keys.keyRate(orgId, KEY_ID))).toBe(0);
    const unloaded = uniqueOrg();
    expect(await reserveAt(unloaded, { at: T0, keyRpm: 1 })).toEqual([1, 'wallet']);
    expect(await redis.exists(keys.keyRate(unloaded, KEY_ID))).toBe(0);
    // The one request of the minute is still there.
    expect(await reserveAt(orgId, { at: T0, keyRpm: 1, amountNano: 1000n })).toEqual(
      held(1, 0, 60_000),
    );
    expect(await reserveAt(orgId, { at: T0, keyRpm: 1 })).toEqual([6, 'key', 1, 60_000, 60_000]);
  });

  it('a reserve of a held request run again (decision 318) is not refused for its own arrival', async () => {
    const orgId = await fundedOrg();
    const requestId = newRequestId();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 1, requestId })).toEqual(held(1, 0, 60_000));
    const bucket = await redis.get(keys.keyRate(orgId, KEY_ID));
    expect(await reserveAt(orgId, { at: T0 + 5, keyRpm: 1, requestId })).toEqual(
      held(1, 0, 59_995),
    );
    expect(await redis.get(keys.keyRate(orgId, KEY_ID))).toBe(bucket);
    expect(await walletReserved(orgId)).toBe('1000');
    expect(await reserveAt(orgId, { at: T0 + 5, keyRpm: 1 })).toEqual([
      6,
      'key',
      1,
      59_995,
      59_995,
    ]);
  });

  it('a reserve run twice for one request (decision 318) counts its arrival once, and answers where the bucket stands', async () => {
    const orgId = await fundedOrg();
    const requestId = newRequestId();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 3, requestId })).toEqual(held(3, 2, 20_000));
    expect(await reserveAt(orgId, { at: T0 + 5, keyRpm: 3, requestId })).toEqual(
      held(3, 2, 19_995),
    );
    expect(await redis.get(keys.keyRate(orgId, KEY_ID))).toBe(`${T0 + 20_000}:0:3`);
    expect(await reserveAt(orgId, { at: T0 + 5, keyRpm: 3 })).toEqual(held(3, 1, 39_995));
  });

  it('without limits no bucket is read or written', async () => {
    const orgId = await fundedOrg();
    await loadUser(orgId, 'pu_free');
    for (let index = 0; index < 5; index += 1) {
      expect(await reserveAt(orgId, { at: T0, user: 'pu_free' })).toEqual(HELD);
    }
    expect(await redis.exists(keys.keyRate(orgId, KEY_ID))).toBe(0);
    expect(await redis.exists(keys.productUserRate(orgId, KEY_ID, 'pu_free'))).toBe(0);
  });
});

describe('a reserve given up on gives its arrival back (release.lua, decision 353)', () => {
  /** release.lua for `requestId`, as the budget store sends it after a reserve got no answer. */
  const releaseOf = async (
    orgId: string,
    requestId: string,
    rated: { key: boolean; user?: string },
  ): Promise<unknown[]> => {
    return (await scripts.release(holdKeys(orgId, rated.user).shared, {
      request_id: requestId,
      held_nano: '1000',
      key_rated: rated.key ? '1' : '0',
      user_rated: rated.user ? '1' : '0',
    })) as unknown[];
  };

  it('one request back in the key bucket, once; nothing for a reserve that did not hold', async () => {
    const orgId = await fundedOrg();
    const bucket = keys.keyRate(orgId, KEY_ID);
    expect(await reserveAt(orgId, { at: T0, keyRpm: 2 })).toEqual(held(2, 1, 30_000));
    const givenUp = newRequestId();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 2, requestId: givenUp })).toEqual(
      held(2, 0, 60_000),
    );
    const refused = newRequestId();
    expect((await reserveAt(orgId, { at: T0, keyRpm: 2, requestId: refused }))[0]).toBe(6);
    // The refused one counted nothing and gives nothing back.
    expect(await releaseOf(orgId, refused, { key: true })).toEqual([0, 0]);
    expect(await redis.get(bucket)).toBe(`${T0 + 60_000}:0:2`);
    // The one given up on: its hold released, its arrival given back, its expiry kept.
    expect(await releaseOf(orgId, givenUp, { key: true })).toEqual([1, 1]);
    expect(await redis.get(bucket)).toBe(`${T0 + 30_000}:0:2`);
    expect(await redis.pttl(bucket)).toBeGreaterThan(0);
    expect(await walletReserved(orgId)).toBe('1000');
    // Run again (sent after a reconnect), it gives nothing more.
    expect(await releaseOf(orgId, givenUp, { key: true })).toEqual([0, 0]);
    expect(await redis.get(bucket)).toBe(`${T0 + 30_000}:0:2`);
    expect(await reserveAt(orgId, { at: T0, keyRpm: 2 })).toEqual(held(2, 0, 60_000));
  });

  it("exactly one request at any limit (7 a minute: 8571 3/7 ms), and in the product user's bucket too", async () => {
    const orgId = await fundedOrg();
    await loadUser(orgId, 'pu_g');
    const limits = { keyRpm: 7, userRpm: 3, user: 'pu_g' };
    expect(await reserveAt(orgId, { at: T0, ...limits })).toEqual(held(3, 2, 20_000));
    const givenUp = newRequestId();
    expect(await reserveAt(orgId, { at: T0, ...limits, requestId: givenUp })).toEqual(
      held(3, 1, 40_000),
    );
    expect(await redis.get(keys.keyRate(orgId, KEY_ID))).toBe(`${T0 + 17_142}:6:7`);
    expect(await releaseOf(orgId, givenUp, { key: true, user: 'pu_g' })).toEqual([1, 2]);
    expect(await redis.get(keys.keyRate(orgId, KEY_ID))).toBe(`${T0 + 8571}:3:7`);
    expect(await redis.get(keys.productUserRate(orgId, KEY_ID, 'pu_g'))).toBe(`${T0 + 20_000}:0:3`);
  });
});

describe('product-user limits under a key', () => {
  it('each product user has a bucket of its own; a key limit and a user limit together', async () => {
    const orgId = await fundedOrg();
    await loadUser(orgId, 'pu_a');
    await loadUser(orgId, 'pu_b');
    const limits = { keyRpm: 3, userRpm: 2 };
    // The tighter bucket is told: A's (1 left of 2) rather than the key's (2 left of 3).
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_a' })).toEqual(held(2, 1, 30_000));
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_a' })).toEqual(held(2, 0, 60_000));
    // A's bucket of 2 is empty (30 s a request); the key's has one left.
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_a' })).toEqual([
      6,
      'product_user',
      2,
      30_000,
      60_000,
    ]);
    // Now the key's bucket is the tighter: none left (B's has one).
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_b' })).toEqual(held(3, 0, 60_000));
    // B's bucket has room, the key's is empty.
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_b' })).toEqual([
      6,
      'key',
      3,
      20_000,
      60_000,
    ]);
    // Both full for A: the longer wait is answered.
    expect(await reserveAt(orgId, { at: T0 + 1000, ...limits, user: 'pu_a' })).toEqual([
      6,
      'product_user',
      2,
      29_000,
      59_000,
    ]);
    // A request without a product user counts against the key only.
    expect(await reserveAt(orgId, { at: T0 + 20_000, ...limits })).toEqual(held(3, 0, 60_000));
    expect(await redis.get(keys.productUserRate(orgId, KEY_ID, 'pu_b'))).toBe(`${T0 + 30_000}:0:2`);
  });
});

describe('what the client is told of its rate (decision 353)', () => {
  it('on a tie of the requests left, the bucket full again later', async () => {
    const orgId = await fundedOrg();
    await loadUser(orgId, 'pu_t');
    const limits = { keyRpm: 3, userRpm: 2 };
    expect(await reserveAt(orgId, { at: T0, ...limits })).toEqual(held(3, 2, 20_000));
    // One left in each: the key's is full again in 40 s, the user's in 30 s.
    expect(await reserveAt(orgId, { at: T0, ...limits, user: 'pu_t' })).toEqual(held(3, 1, 40_000));
  });

  it('counts down the requests left, exactly, as time refills the bucket', async () => {
    const orgId = await fundedOrg();
    expect(await reserveAt(orgId, { at: T0, keyRpm: 5 })).toEqual(held(5, 4, 12_000));
    expect(await reserveAt(orgId, { at: T0, keyRpm: 5 })).toEqual(held(5, 3, 24_000));
    // 11.999 s later not quite one request is back; at 12 s one is.
    expect(await reserveAt(orgId, { at: T0 + 11_999, keyRpm: 5 })).toEqual(held(5, 2, 24_001));
    expect(await reserveAt(orgId, { at: T0 + 24_000, keyRpm: 5 })).toEqual(held(5, 3, 24_000));
  });
});

describe('count_tokens: a bucket of its own (rate-limit.lua, decision 353)', () => {
  it('counts one request when it passes, refuses with the wait and the full time, writing nothing', async () => {
    const orgId = uniqueOrg();
    const bucket = keys.countTokensRate(orgId, KEY_ID);
    const take = async (at: number) =>
      (await scripts.rateLimit(
        { bucket, counted: keys.countTokensCounted(orgId, newRequestId()) },
        { limit: 4, now_ms: at, counted_ttl_ms: 300_000 },
      )) as unknown[];
    expect(await take(T0)).toEqual([0, 3, 15_000]);
    expect(await take(T0)).toEqual([0, 2, 30_000]);
    expect(await take(T0)).toEqual([0, 1, 45_000]);
    expect(await take(T0)).toEqual([0, 0, 60_000]);
    expect(await take(T0 + 1_000)).toEqual([6, 14_000, 59_000]);
    expect(await redis.get(bucket)).toBe(`${T0 + 60_000}:0:4`);
    expect(await take(T0 + 15_000)).toEqual([0, 0, 60_000]);
    for (const limit of ['', '0', '1000001']) {
      await expect(
        scripts.rateLimit(
          { bucket, counted: keys.countTokensCounted(orgId, 'req_bad') },
          { limit, now_ms: T0, counted_ttl_ms: 300_000 },
        ),
      ).rejects.toThrow(/gw_invalid_argument: limit/);
    }
  });

  it('counts a request once however often it is sent (a re-send after a reconnect, decision 364)', async () => {
    const orgId = uniqueOrg();
    const bucket = keys.countTokensRate(orgId, KEY_ID);
    const takeAs = async (requestId: string, at: number) =>
      (await scripts.rateLimit(
        { bucket, counted: keys.countTokensCounted(orgId, requestId) },
        { limit: 2, now_ms: at, counted_ttl_ms: 300_000 },
      )) as unknown[];
    const [sent, other, refused] = [newRequestId(), newRequestId(), newRequestId()];
    expect(await takeAs(sent, T0)).toEqual([0, 1, 30_000]);
    // The same count run again, 10 s later: where the bucket stands then, nothing counted.
    expect(await takeAs(sent, T0 + 10_000)).toEqual([0, 1, 20_000]);
    expect(await redis.get(bucket)).toBe(`${T0 + 30_000}:0:2`);
    const marker = keys.countTokensCounted(orgId, sent);
    expect(await redis.get(marker)).toBe('1');
    expect(await redis.pttl(marker)).toBeGreaterThan(290_000);
    // Another request still takes the last one; a third is refused and leaves no marker,
    // so it is counted when it is sent again once the bucket has room.
    expect(await takeAs(other, T0 + 10_000)).toEqual([0, 0, 50_000]);
    expect(await takeAs(refused, T0 + 10_000)).toEqual([6, 20_000, 50_000]);
    expect(await redis.exists(keys.countTokensCounted(orgId, refused))).toBe(0);
    expect(await takeAs(refused, T0 + 30_000)).toEqual([0, 0, 60_000]);
    expect(await takeAs(refused, T0 + 30_000)).toEqual([0, 0, 60_000]);
    expect(await redis.get(bucket)).toBe(`${T0 + 90_000}:0:2`);
    await expect(
      scripts.rateLimit(
        { bucket, counted: keys.countTokensCounted(orgId, 'req_bad') },
        { limit: 2, now_ms: T0, counted_ttl_ms: 0 },
      ),
    ).rejects.toThrow(/gw_invalid_argument: counted_ttl_ms/);
  });

  it("through the budget store: apart from the key's inference requests", async () => {
    const orgId = await fundedOrg();
    const bucket = (requestId: string) => ({
      orgId,
      apiKeyId: KEY_ID,
      limitPerMinute: 2,
      requestId,
    });
    const first = bucket(newRequestId());
    expect(await budget.takeCountTokens(first)).toMatchObject({
      kind: 'passed',
      rateLimit: { limitPerMinute: 2, remaining: 1, resetMs: 30_000 },
    });
    // The same request again is not a second count.
    expect(await budget.takeCountTokens(first)).toMatchObject({
      kind: 'passed',
      rateLimit: { remaining: 1 },
    });
    expect(await budget.takeCountTokens(bucket(newRequestId()))).toMatchObject({
      kind: 'passed',
      rateLimit: { remaining: 0 },
    });
    expect(await budget.takeCountTokens(bucket(newRequestId()))).toMatchObject({
      kind: 'rate_limited',
      scope: 'key',
      limitPerMinute: 2,
      rateLimit: { remaining: 0 },
    });
    // The key's own bucket was not touched: its inference requests have their whole burst.
    expect(await redis.exists(keys.keyRate(orgId, KEY_ID))).toBe(0);
    expect(await reserveAt(orgId, { at: Date.now(), keyRpm: 1 })).toEqual(held(1, 0, 60_000));
  });
});

describe('the budget store', () => {
  it('answers rate_limited with the scope, the limit and the wait; nothing held', async () => {
    const orgId = await fundedOrg();
    const accounts: RequestAccounts = {
      orgId,
      appConnectionId: 'conn_rate',
      orgCap: null,
      connectionCap: null,
      user: null,
      walletPays: true,
      credentials: null,
    };
    const reserve = () =>
      budget.reserve({
        requestId: newRequestId(),
        accounts,
        amountNano: 10n,
        rateLimits: { apiKeyId: KEY_ID, keyPerMinute: 2, productUserPerMinute: 1 },
      });
    const first = await reserve();
    expect(first).toMatchObject({
      kind: 'held',
      rateLimit: { limitPerMinute: 2, remaining: 1, resetMs: 30_000 },
    });
    expect(await reserve()).toMatchObject({ kind: 'held', rateLimit: { remaining: 0 } });
    const refused = await reserve();
    expect(refused).toMatchObject({
      kind: 'rate_limited',
      scope: 'key',
      limitPerMinute: 2,
      rateLimit: { limitPerMinute: 2, remaining: 0 },
    });
    expect(refused.kind === 'rate_limited' && refused.retryAfterMs).toBeGreaterThan(29_000);
    expect(refused.kind === 'rate_limited' && refused.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(await walletReserved(orgId)).toBe('20');
  });
});

describe('the refusals the budget store remembers (decision 347)', () => {
  const accountsOf = (orgId: string): RequestAccounts => ({
    orgId,
    appConnectionId: 'conn_rate',
    orgCap: null,
    connectionCap: null,
    user: null,
    walletPays: true,
    credentials: null,
  });

  it("after a refusal by the key's own limit, answers it without Redis until the wait runs out", async () => {
    const orgId = await fundedOrg();
    const limits = { apiKeyId: 'key_known', keyPerMinute: 1, productUserPerMinute: null };
    const reserve = () =>
      budget.reserve({
        requestId: newRequestId(),
        accounts: accountsOf(orgId),
        amountNano: 10n,
        rateLimits: limits,
      });
    expect(budget.knownRateRefusal(limits)).toBeUndefined();
    expect(await reserve()).toMatchObject({ kind: 'held' });
    // One pass is not a refusal: nothing known yet.
    expect(budget.knownRateRefusal(limits)).toBeUndefined();
    const refused = await reserve();
    expect(refused).toMatchObject({ kind: 'rate_limited', scope: 'key', limitPerMinute: 1 });
    const known = budget.knownRateRefusal(limits);
    expect(known).toMatchObject({ kind: 'rate_limited', scope: 'key', limitPerMinute: 1 });
    // The wait left, counted from the same clock as the reserve's (never longer than it).
    const waited = refused.kind === 'rate_limited' ? refused.retryAfterMs : 0;
    expect(known!.retryAfterMs).toBeLessThanOrEqual(waited);
    expect(known!.retryAfterMs).toBeGreaterThan(waited - 1_000);
    // Under another limit (the key was changed) the bucket is asked again.
    expect(budget.knownRateRefusal({ ...limits, keyPerMinute: 2 })).toBeUndefined();
    expect(budget.knownRateRefusal({ ...limits, keyPerMinute: null })).toBeUndefined();
    // When the bucket passes again, so does the store.
    const bucket = keys.keyRate(orgId, 'key_known');
    const [tatMs, ...rest] = (await redis.get(bucket))!.split(':');
    await redis.set(bucket, [Number(tatMs) - 60_000, ...rest].join(':'), 'PX', 60_000);
    expect(await reserve()).toMatchObject({ kind: 'held' });
  });

  it("does not remember a product user's refusal: other users of the key still pass", async () => {
    const orgId = await fundedOrg();
    const limits = { apiKeyId: 'key_users', keyPerMinute: 10, productUserPerMinute: 1 };
    // The user's (uncapped) account is loaded by the store from Postgres on first use.
    const userAccounts = (userId: string): RequestAccounts => ({
      ...accountsOf(orgId),
      user: {
        productUserId: userId,
        capNano: null,
        creditMode: 'track_only',
        period: monthlyPeriod(new Date(), null),
      },
    });
    const reserveAs = async (userId: string) =>
      budget.reserve({
        requestId: newRequestId(),
        accounts: userAccounts(userId),
        amountNano: 10n,
        rateLimits: limits,
      });
    expect(await reserveAs('pu_one')).toMatchObject({ kind: 'held' });
    expect(await reserveAs('pu_one')).toMatchObject({
      kind: 'rate_limited',
      scope: 'product_user',
    });
    expect(budget.knownRateRefusal(limits)).toBeUndefined();
    expect(await reserveAs('pu_two')).toMatchObject({ kind: 'held' });
  });

  it("answers a known key refusal with the product user's longer wait when its own bucket refused it too (decision 362)", async () => {
    const orgId = await fundedOrg();
    // As admission names them: the product user by the external id the request sent.
    const limitsOf = (externalUserId?: string) => ({
      apiKeyId: 'key_both',
      keyPerMinute: 3,
      productUserPerMinute: 1,
      externalUserId,
    });
    const reserveAs = async (externalUserId: string) =>
      budget.reserve({
        requestId: newRequestId(),
        accounts: {
          ...accountsOf(orgId),
          user: {
            productUserId: `pu_${externalUserId}`,
            capNano: null,
            creditMode: 'track_only',
            period: monthlyPeriod(new Date(), null),
          },
        },
        amountNano: 10n,
        rateLimits: limitsOf(externalUserId),
      });
    expect(await reserveAs('a')).toMatchObject({ kind: 'held' });
    // a's bucket of 1 refuses it for a minute; the key (3) has two left.
    const userRefusal = await reserveAs('a');
    expect(userRefusal).toMatchObject({ kind: 'rate_limited', scope: 'product_user' });
    expect(await reserveAs('b')).toMatchObject({ kind: 'held' });
    expect(await reserveAs('c')).toMatchObject({ kind: 'held' });
    // The key is full: refused for about 20 s, and remembered.
    expect(await reserveAs('d')).toMatchObject({ kind: 'rate_limited', scope: 'key' });
    const keyKnown = budget.knownRateRefusal(limitsOf('d'));
    expect(keyKnown).toMatchObject({ scope: 'key', limitPerMinute: 3 });
    expect(keyKnown!.retryAfterMs).toBeLessThanOrEqual(20_000);
    // a's next request is refused by both buckets: the longer wait is a's own (decision 344),
    // as Redis would answer it, not the key's 20 s.
    const known = budget.knownRateRefusal(limitsOf('a'));
    expect(known).toMatchObject({
      kind: 'rate_limited',
      scope: 'product_user',
      limitPerMinute: 1,
      rateLimit: { limitPerMinute: 1, remaining: 0 },
    });
    const userWait = userRefusal.kind === 'rate_limited' ? userRefusal.retryAfterMs : 0;
    expect(known!.retryAfterMs).toBeGreaterThan(20_000);
    expect(known!.retryAfterMs).toBeLessThanOrEqual(userWait);
    // A product user refused nowhere, or a request naming none, gets the key's.
    expect(budget.knownRateRefusal(limitsOf('e'))).toMatchObject({ scope: 'key' });
    expect(budget.knownRateRefusal(limitsOf())).toMatchObject({ scope: 'key' });
    // A product user's refusal alone is still asked of Redis (decision 347).
    expect(budget.knownRateRefusal({ ...limitsOf('a'), apiKeyId: 'key_other' })).toBeUndefined();
  });
});
