// A user's credits loaded from Postgres while their grants change and the usage writer moves
// what drew on them: the grants are read in the measurement's ledger snapshot, less what the
// cut's unwritten records drew on them, and installed with the user's account in one script
// (docs/decisions.md, 308). Each interleaving is driven on the real Redis and Postgres, and
// the live credits end up as the ledger says: never more, and never less.
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { NEVER_EXPIRES_MS, type RebuildObserver } from '../src/billing/account-rebuild.js';
import { createDbPool, SNAPSHOT_STATEMENT, type DbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { nanoToNumeric, numericToNano } from '../src/money.js';
import { monthlyPeriod } from '../src/periods.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool, hookedScripts, type Step } from './support/interleave.js';
import { creditsChangeKeys } from './support/credits-change-keys.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('credits');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
/** Requests, grants and everything but the load under test go through this layer. */
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const period = monthlyPeriod(new Date(), null);
const previous = monthlyPeriod(new Date(period.start.getTime() - 1), null);
/**
 * The usage writer on a pool of its own, as the gateway's writer thread has: steps run inside
 * the loads' transactions (hookedPool), and a drain that waited for one of their connections
 * would wait for itself until the pool gave up, leaving what it read unwritten.
 */
const writerDb = createDbPool(TEST_DATABASE_URL, 2);
const writer = testUsageWriter(writerRedis, keys, writerDb, 'credits-race', {
  claimIdleMs: 60_000,
});
let sequence = 0;

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await Promise.all([db.end(), writerDb.end()]);
});

/** The measurement's read of its users' active grants (src/billing/ledger-amounts.ts). */
const GRANTS_QUERY = /FROM credit_grants g LEFT JOIN credit_consumptions/;
/** The measurement's ledger snapshot (its first statement). */
const SNAPSHOT = new RegExp(`^${SNAPSHOT_STATEMENT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

/** A money layer whose loads read Postgres through `pool`, and how its rebuilds ended. */
function loadingLayer(pool: DbPool, layerScripts = scripts) {
  const outcomes: string[] = [];
  const observe: RebuildObserver = (kind, outcome, measurements) => {
    outcomes.push(`${kind}/${outcome}/${measurements}`);
  };
  const layer = createMoneyLayer({
    db: pool,
    redis,
    keys,
    scripts: layerScripts,
    reservationTtlMs: 60_000,
    observeRebuilds: observe,
  });
  return { loader: layer.loader, outcomes };
}

interface User {
  readonly orgId: string;
  readonly userId: string;
}

async function newUser(): Promise<User> {
  sequence += 1;
  const orgId = await createOrganization(db, `credits race ${prefix} ${sequence}`);
  const appId = await createApp(db, orgId, 'app');
  const userId = `pu_credits_${prefix}_${sequence}`;
  await db.query(
    'INSERT INTO product_users (id, org_id, app_id, external_user_id) VALUES ($1, $2, $3, $4)',
    [userId, orgId, appId, 'customer'],
  );
  return { orgId, userId };
}

/** Credits pay everything: the user's base allowance is 0. */
const accountsOf = ({ orgId, userId }: User): RequestAccounts => ({
  orgId,
  appConnectionId: `conn_${orgId}`,
  orgCap: null,
  connectionCap: null,
  user: { productUserId: userId, capNano: 0n, creditMode: 'enforce', period },
  walletPays: false,
  credentials: null,
});

const creditKeys = ({ orgId, userId }: User, currency = 'USD') =>
  creditsChangeKeys(keys, orgId, userId, {
    currentKey: period.key,
    previousKey: previous.key,
    currency,
  });

/** A grant as the service makes one: committed to Postgres, then added to Redis. */
async function commitGrant(user: User, grantId: string, amountNano: bigint, currency = 'USD') {
  await db.query(
    `INSERT INTO credit_grants (id, org_id, product_user_id, amount, currency)
     VALUES ($1, $2, $3, $4, $5)`,
    [grantId, user.orgId, user.userId, nanoToNumeric(amountNano), currency],
  );
}
async function addGrantToRedis(user: User, grantId: string, amountNano: bigint, currency = 'USD') {
  await scripts.creditsChange(creditKeys(user, currency), {
    action: 'add',
    grant_id: grantId,
    amount_nano: amountNano.toString(),
    expires_at_ms: String(NEVER_EXPIRES_MS),
    ttl_ms: '',
    keep_held: '',
  });
}

/** A request that credits pay in full; its record stays in the stream until a drain. */
async function spend(user: User, costNano: bigint): Promise<string> {
  const requestId = newRequestId();
  const accounts = accountsOf(user);
  expect(await store.reserve({ requestId, accounts, amountNano: costNano })).toMatchObject({
    kind: 'held',
  });
  const settled = usageRecord(user.orgId, costNano, {
    requestId,
    appConnectionId: accounts.appConnectionId,
    productUserId: user.userId,
    reservedNano: costNano,
  });
  expect(await store.settle(settled, accounts)).toBe('settled');
  return requestId;
}

/** The user's accounts leave Redis (the credits' TTL, an eviction); the stream stays. */
const evict = (user: User): Promise<number> =>
  redis.del(
    keys.userSpend(user.orgId, user.userId, period.key),
    keys.userCredits(user.orgId, user.userId, 'USD'),
    keys.userGrants(user.orgId, user.userId, 'USD'),
  );

const liveCredit = async (user: User, grantId: string, currency = 'USD') =>
  redis.hget(keys.userCredits(user.orgId, user.userId, currency), `g:${grantId}`);

/**
 * The writer moves what is in the stream, one drain after another as its loop does: steps run
 * from concurrent loads, and two drains of one writer at once (two transactions of the same
 * consumer) is not something a writer does.
 */
let lastDrain: Promise<unknown> = Promise.resolve();
const drain = (): Promise<void> => {
  const next = lastDrain.then(() => writer.drainOnce());
  lastDrain = next.catch(() => undefined);
  return next.then(() => undefined);
};

/** The grant's row in Postgres, and what is left on it there. */
async function ledgerRemaining(grantId: string): Promise<bigint> {
  const { rows } = await db.query<{ remaining: string }>(
    `SELECT (g.amount - COALESCE(sum(c.amount), 0))::text AS remaining
       FROM credit_grants g LEFT JOIN credit_consumptions c ON c.grant_id = g.id
      WHERE g.id = $1 GROUP BY g.id`,
    [grantId],
  );
  return numericToNano(rows[0]!.remaining);
}

/** A user with a grant of 1,000 and a request that drew 300 on it, its record unwritten. */
async function userWhoDrew(): Promise<{ user: User; grantId: string; drawn: string }> {
  const user = await newUser();
  const grantId = `grant_drawn_${prefix}_${sequence}`;
  await commitGrant(user, grantId, 1_000n);
  await addGrantToRedis(user, grantId, 1_000n);
  const drawn = await spend(user, 300n);
  expect(await liveCredit(user, grantId)).toBe('700');
  await evict(user);
  return { user, grantId, drawn };
}

/** What the writer does with a record usage_records refuses: a dead letter, out of the stream. */
async function deadLetter(user: User, requestId: string): Promise<void> {
  const stream = keys.usageStream(user.orgId);
  const entries = await redis.xrange(stream, '-', '+');
  const [entryId, fields] = entries.find(([, f]) => f.some((field) => field.includes(requestId)))!;
  await db.query(
    `INSERT INTO usage_dead_letters (stream, entry_id, request_id, org_id, reason, entry)
     VALUES ($1, $2, $3, $4, 'refused', $5)`,
    [stream, entryId, requestId, user.orgId, JSON.stringify(fields)],
  );
  await redis.xdel(stream, entryId);
}

describe("a user's credits loaded while the writer moves what drew on them", () => {
  it('a record moved between the snapshot and the cut is in neither: measured again, taken once', async () => {
    const { user, grantId, drawn } = await userWhoDrew();
    let moved = false;
    const { loader, outcomes } = loadingLayer(
      hookedPool(db, [
        {
          match: SNAPSHOT,
          after: true,
          step: async () => {
            await drain();
            moved = true;
          },
        },
      ]),
    );
    await loader.load(['user'], accountsOf(user));
    expect(moved).toBe(true);
    const { rows } = await db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM credit_consumptions WHERE request_id = $1',
      [drawn],
    );
    expect(rows[0]!.n).toBe('1');
    expect(await ledgerRemaining(grantId)).toBe(700n);
    expect(await liveCredit(user, grantId)).toBe('700');
    expect(outcomes).toEqual(['user/installed/2']);
  });

  it('a record moved after the cut, before the grants are read: in the cut only, taken once', async () => {
    const { user, grantId } = await userWhoDrew();
    let moved = false;
    const { loader, outcomes } = loadingLayer(
      hookedPool(db, [
        {
          match: GRANTS_QUERY,
          step: async () => {
            await drain();
            moved = true;
          },
        },
      ]),
    );
    await loader.load(['user'], accountsOf(user));
    expect(moved).toBe(true);
    expect(await ledgerRemaining(grantId)).toBe(700n);
    expect(await liveCredit(user, grantId)).toBe('700');
    expect(outcomes).toEqual(['user/installed/1']);
  });

  it('a user whose account is there and whose credits went: the credits alone, exactly', async () => {
    const { user, grantId } = await userWhoDrew();
    // The account comes back first (a load), then the credits alone go.
    await loadingLayer(db).loader.load(['user'], accountsOf(user));
    await redis.del(
      keys.userCredits(user.orgId, user.userId, 'USD'),
      keys.userGrants(user.orgId, user.userId, 'USD'),
    );
    expect(await redis.exists(keys.userSpend(user.orgId, user.userId, period.key))).toBe(1);
    const { loader, outcomes } = loadingLayer(db);
    await loader.load(['user'], accountsOf(user));
    expect(await liveCredit(user, grantId)).toBe('700');
    expect(outcomes).toEqual(['user/present/0']);
    // And once the record is written.
    await drain();
    await redis.del(keys.userCredits(user.orgId, user.userId, 'USD'));
    await loader.load(['user'], accountsOf(user));
    expect(await liveCredit(user, grantId)).toBe('700');
  });

  it('an account another instance installed since the cut: the credits are merged with it, in one measurement', async () => {
    const { user, grantId } = await userWhoDrew();
    let grantReads = 0;
    const { loader, outcomes } = loadingLayer(
      hookedPool(db, [
        { match: GRANTS_QUERY, every: true, step: async () => void (grantReads += 1) },
      ]),
      hookedScripts(
        scripts,
        (name) => name === 'accountRebuildUser',
        async () => {
          // Another instance installs the account and its credits, which then go (only
          // the credits: an eviction) before this rebuild's install finds the account.
          await loadingLayer(db).loader.load(['user'], accountsOf(user));
          await redis.del(
            keys.userCredits(user.orgId, user.userId, 'USD'),
            keys.userGrants(user.orgId, user.userId, 'USD'),
          );
        },
      ),
    );
    await loader.load(['user'], accountsOf(user));
    expect(outcomes).toEqual(['user/present/1']);
    expect(grantReads).toBe(1);
    expect(await liveCredit(user, grantId)).toBe('700');
    expect(
      await redis.zscore(keys.userGrants(user.orgId, user.userId, 'USD'), grantId),
    ).not.toBeNull();
  });

  it('a grant revoked after the snapshot is not brought back by the install', async () => {
    const { user, grantId } = await userWhoDrew();
    const { loader } = loadingLayer(
      hookedPool(db, [
        {
          match: SNAPSHOT,
          after: true,
          step: async () => {
            await db.query(`UPDATE credit_grants SET status = 'revoked' WHERE id = $1`, [grantId]);
            await scripts.creditsChange(creditKeys(user), {
              action: 'remove',
              grant_id: grantId,
              amount_nano: '',
              expires_at_ms: '',
              ttl_ms: '600000',
              keep_held: '1',
            });
          },
        },
      ]),
    );
    await loader.load(['user'], accountsOf(user));
    expect(await liveCredit(user, grantId)).toBeNull();
    expect(await redis.zscore(keys.userGrants(user.orgId, user.userId, 'USD'), grantId)).toBeNull();
  });
});

describe('a grant added while a load finds the user with none', () => {
  // Where the new grant's Redis add lands: before the load installs the credits it read (no
  // grant), or after the whole load (the user's account installed too).
  const landings: ReadonlyArray<{ name: string; redisAddAfterLoad: boolean }> = [
    { name: 'its Redis add before the credits are installed', redisAddAfterLoad: false },
    { name: 'its Redis add after the load', redisAddAfterLoad: true },
  ];
  for (const { name, redisAddAfterLoad } of landings) {
    it(`committed after the measurement's snapshot, ${name}: spendable, and reloaded exactly`, async () => {
      const user = await newUser();
      const grantId = `grant_new_${prefix}_${sequence}`;
      const euroGrantId = `grant_eur_${prefix}_${sequence}`;
      // A grant in another currency is no grant for the settlement currency's load.
      await commitGrant(user, euroGrantId, 5_000n, 'EUR');
      await addGrantToRedis(user, euroGrantId, 5_000n, 'EUR');
      const commit: Step = async () => {
        await commitGrant(user, grantId, 1_000n);
        if (!redisAddAfterLoad) await addGrantToRedis(user, grantId, 1_000n);
      };
      let committed = 0;
      const { loader } = loadingLayer(
        hookedPool(db, [
          {
            match: SNAPSHOT,
            after: true,
            step: async () => {
              committed += 1;
              await commit();
            },
          },
        ]),
      );
      await loader.load(['user'], accountsOf(user));
      expect(committed).toBe(1);
      if (redisAddAfterLoad) await addGrantToRedis(user, grantId, 1_000n);
      expect(await liveCredit(user, euroGrantId)).toBeNull();
      expect(await liveCredit(user, grantId)).toBe('1000');
      // The user spends on it; a reload with the record unwritten, then written, agrees.
      await spend(user, 300n);
      expect(await liveCredit(user, grantId)).toBe('700');
      await evict(user);
      await loader.load(['user'], accountsOf(user));
      expect(await liveCredit(user, grantId)).toBe('700');
      await drain();
      await evict(user);
      await loader.load(['user'], accountsOf(user));
      expect(await liveCredit(user, grantId)).toBe('700');
      expect(await liveCredit(user, euroGrantId, 'EUR')).toBe('5000');
    });
  }
});

describe('credits measured while the writer cuts into every measurement', () => {
  /**
   * Before each measurement's cut, the stream loses an entry (the deletion count moves: the
   * measurement is not exact); before the eighth's, the writer moves the record that drew on
   * the user's grant, so that record is in neither the snapshot nor the cut.
   */
  function cutInto(user: User, last: Step = drain) {
    let snapshots = 0;
    const step: Step = async () => {
      snapshots += 1;
      if (snapshots < 8) {
        const stream = keys.usageStream(user.orgId);
        const id = await redis.xadd(stream, '*', 'noise', '1');
        await redis.xdel(stream, id!);
      } else if (snapshots === 8) {
        await last();
      }
    };
    return { hooks: [{ match: SNAPSHOT, after: true, every: true, step }], count: () => snapshots };
  }

  it('the credits alone (account there): never installed above the ledger', async () => {
    const { user, grantId } = await userWhoDrew();
    await loadingLayer(db).loader.load(['user'], accountsOf(user));
    await redis.del(
      keys.userCredits(user.orgId, user.userId, 'USD'),
      keys.userGrants(user.orgId, user.userId, 'USD'),
    );
    const { hooks, count } = cutInto(user);
    const { loader } = loadingLayer(hookedPool(db, hooks));
    await loader.load(['user'], accountsOf(user));
    expect(count()).toBeGreaterThanOrEqual(8);
    expect(await ledgerRemaining(grantId)).toBe(700n);
    expect(await liveCredit(user, grantId)).toBe('700');
  });

  it('the record dead-lettered in the last window: what it drew stays taken', async () => {
    const { user, grantId, drawn } = await userWhoDrew();
    const { hooks, count } = cutInto(user, () => deadLetter(user, drawn));
    const { loader, outcomes } = loadingLayer(hookedPool(db, hooks));
    await loader.load(['user'], accountsOf(user));
    expect(count()).toBeGreaterThanOrEqual(8);
    expect(outcomes[0]).toBe('user/inexact/8');
    expect(await liveCredit(user, grantId)).toBe('700');
  });

  it('with the account (installed inexact): the credits are never above the ledger', async () => {
    const { user, grantId } = await userWhoDrew();
    const { hooks, count } = cutInto(user);
    const { loader, outcomes } = loadingLayer(hookedPool(db, hooks));
    await loader.load(['user'], accountsOf(user));
    expect(count()).toBeGreaterThanOrEqual(8);
    expect(outcomes[0]).toBe('user/inexact/8');
    expect(await ledgerRemaining(grantId)).toBe(700n);
    expect(await liveCredit(user, grantId)).toBe('700');
  });
});

describe("a late settle of the last period draws on the credits while the new period's account is rebuilt", () => {
  it('after the cut, before the install: the install keeps what Redis has (never above it)', async () => {
    const user = await newUser();
    const grantId = `grant_late_${prefix}_${sequence}`;
    await commitGrant(user, grantId, 1_000n);
    await addGrantToRedis(user, grantId, 1_000n);
    // The user's periods start on a day of the month: the current one began an hour ago, and
    // a request admitted in the last one (its account and the credits loaded then) is late.
    const anchor = new Date(Date.now() - 3600 * 1000);
    const current = monthlyPeriod(new Date(), anchor);
    const last = monthlyPeriod(new Date(current.start.getTime() - 1), anchor);
    const withPeriod = (userPeriod: typeof period): RequestAccounts => ({
      ...accountsOf(user),
      user: { ...accountsOf(user).user!, period: userPeriod },
    });
    const lastAccounts = withPeriod(last);
    const currentAccounts = withPeriod(current);
    const requestId = newRequestId();
    expect(
      await store.reserve({ requestId, accounts: lastAccounts, amountNano: 200n }),
    ).toMatchObject({
      kind: 'held',
    });
    expect(await redis.exists(keys.userSpend(user.orgId, user.userId, current.key))).toBe(0);
    // It settles on the last period's account once the new one's measurement is cut.
    let settled = false;
    const lateSettle: Step = async () => {
      const record = usageRecord(user.orgId, 200n, {
        requestId,
        appConnectionId: lastAccounts.appConnectionId,
        productUserId: user.userId,
        reservedNano: 200n,
      });
      expect(await store.settle(record, lastAccounts)).toBe('settled');
      settled = true;
    };
    const outcomes: string[] = [];
    const { loader } = createMoneyLayer({
      db,
      redis,
      keys,
      scripts: hookedScripts(scripts, (name) => name === 'accountRebuildUser', lateSettle),
      reservationTtlMs: 60_000,
      observeRebuilds: (kind, outcome, measurements) => {
        outcomes.push(`${kind}/${outcome}/${measurements}`);
      },
    });
    await loader.load(['user'], currentAccounts);
    expect(settled).toBe(true);
    expect(outcomes).toEqual(['user/installed/1']);
    expect(await liveCredit(user, grantId)).toBe('800');
    await drain();
    expect(await ledgerRemaining(grantId)).toBe(800n);
    // And rebuilt from the ledger alone, the same.
    await redis.del(
      keys.userSpend(user.orgId, user.userId, current.key),
      keys.userCredits(user.orgId, user.userId, 'USD'),
      keys.userGrants(user.orgId, user.userId, 'USD'),
    );
    await loader.load(['user'], currentAccounts);
    expect(await liveCredit(user, grantId)).toBe('800');
  });
});

describe('a record that drew on a grant and was dead-lettered', () => {
  it('before the load, or between its snapshot and its cut: what it drew stays taken', async () => {
    for (const between of [false, true]) {
      const { user, grantId, drawn } = await userWhoDrew();
      if (!between) await deadLetter(user, drawn);
      const { loader, outcomes } = loadingLayer(
        hookedPool(
          db,
          between ? [{ match: SNAPSHOT, after: true, step: () => deadLetter(user, drawn) }] : [],
        ),
      );
      await loader.load(['user'], accountsOf(user));
      expect(outcomes).toEqual([between ? 'user/installed/2' : 'user/installed/1']);
      expect(await liveCredit(user, grantId)).toBe('700');
      expect(await redis.hget(keys.userSpend(user.orgId, user.userId, period.key), 'spent')).toBe(
        '300',
      );
    }
  });
});

describe("a month's start in one org while the last period's requests settle and the writer moves them", () => {
  it("every user's live credits end up as the ledger says", async () => {
    const anchor = new Date(Date.now() - 3600 * 1000);
    const current = monthlyPeriod(new Date(), anchor);
    const last = monthlyPeriod(new Date(current.start.getTime() - 1), anchor);
    const first = await newUser();
    const users: User[] = [first];
    const appId = (
      await db.query<{ app_id: string }>('SELECT app_id FROM product_users WHERE id = $1', [
        first.userId,
      ])
    ).rows[0]!.app_id;
    for (let index = 1; index < 8; index += 1) {
      const userId = `${first.userId}_${index}`;
      await db.query(
        'INSERT INTO product_users (id, org_id, app_id, external_user_id) VALUES ($1, $2, $3, $4)',
        [userId, first.orgId, appId, `customer_${index}`],
      );
      users.push({ orgId: first.orgId, userId });
    }
    const withPeriod = (user: User, userPeriod: typeof period): RequestAccounts => ({
      ...accountsOf(user),
      user: { ...accountsOf(user).user!, period: userPeriod },
    });
    const grants = new Map<User, string>();
    const pending: Step[] = [];
    for (const [index, user] of users.entries()) {
      const grantId = `grant_start_${prefix}_${sequence}_${index}`;
      grants.set(user, grantId);
      await commitGrant(user, grantId, 10_000n);
      await addGrantToRedis(user, grantId, 10_000n);
      // Three requests admitted in the last period, on its account and the credits.
      for (let request = 0; request < 3; request += 1) {
        const requestId = newRequestId();
        const accounts = withPeriod(user, last);
        const cost = BigInt(100 * (index + 1) + request);
        expect(await store.reserve({ requestId, accounts, amountNano: cost })).toMatchObject({
          kind: 'held',
        });
        pending.push(async () => {
          const record = usageRecord(user.orgId, cost, {
            requestId,
            appConnectionId: accounts.appConnectionId,
            productUserId: user.userId,
            reservedNano: cost,
          });
          expect(await store.settle(record, accounts)).toBe('settled');
        });
      }
      // One settles now, drawing on the credits; its record stays in the stream. Then half of
      // the users lose their credits (their accounts stay).
      await pending.pop()!();
      if (index % 2 === 0) {
        await redis.del(
          keys.userCredits(user.orgId, user.userId, 'USD'),
          keys.userGrants(user.orgId, user.userId, 'USD'),
        );
      }
    }
    // Before each statement of the loads, a late request settles; every other time the writer
    // moves what is in the stream.
    let steps = 0;
    const traffic: Step = async () => {
      steps += 1;
      await pending.shift()?.();
      if (steps % 2 === 0) await drain();
    };
    const { loader } = loadingLayer(hookedPool(db, [{ match: /./, every: true, step: traffic }]));
    await Promise.all(users.map((user) => loader.load(['user'], withPeriod(user, current))));
    expect(steps).toBeGreaterThan(0);
    while (pending.length > 0) await pending.shift()!();
    for (let round = 0; round < 3; round += 1) await drain();
    expect(await redis.xlen(keys.usageStream(first.orgId))).toBe(0);
    for (const user of users) {
      const grantId = grants.get(user)!;
      expect(await liveCredit(user, grantId)).toBe(String(await ledgerRemaining(grantId)));
    }
  });
});
