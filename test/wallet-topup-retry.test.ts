// A wallet top-up is committed in Postgres, then added to the live wallet in Redis. When Redis
// fails between the two (here: the after-commit script sent on a client whose connection is
// closed), the caller gets an error, and a retry with the same Idempotency-Key is answered 409
// "committed" without running again: the top-up is in the ledger and not spendable. Now the
// top-up is marked owed to the live wallet before its commit, and the wallet's next read or
// change (or `gw reconcile`) adds it there, once; never to a wallet rebuilt from a ledger
// that has it already (decision 521).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { readWallet } from '../src/admin/wallet.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { Reconciler } from '../src/billing/reconcile.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts, type RedisScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { walletAccounts } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('topupretry');
const redis = testRedis();
const unreachable = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const money = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const wallets = money.wallets;

/** The script a top-up runs after its Postgres commit. */
const AFTER_COMMIT = 'walletTopUpApply';
/** The money layer of an instance that loses Redis between a top-up's commit and its Redis step. */
const cutOffScripts: RedisScripts = {
  ...scripts,
  [AFTER_COMMIT]: defineScripts(unreachable)[AFTER_COMMIT],
};
const cutOff = createMoneyLayer({
  db,
  redis,
  keys,
  scripts: cutOffScripts,
  reservationTtlMs: 60_000,
}).wallets;

beforeAll(async () => {
  await unreachable.quit();
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

const FUNDED = 1_000_000n;
const TOP_UP = 250_000n;

/** An org funded with 1,000,000 nano, its wallet live in Redis. */
async function fundedOrg(name: string): Promise<string> {
  const orgId = await createOrganization(db, `${name} ${prefix}`);
  await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
  return orgId;
}

const walletOnly = (orgId: string): RequestAccounts =>
  walletAccounts({ orgId, appConnectionId: `conn_${orgId}` });

const live = async (orgId: string): Promise<string | null> =>
  redis.hget(keys.wallet(orgId), 'balance');

async function topUpRows(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ amount: string }>(
    `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => row.amount);
}

/** The top-up fails after its commit: recorded in the ledger, not in the live balance. */
async function failedTopUp(orgId: string): Promise<void> {
  await expect(cutOff.topUp(orgId, TOP_UP, CLI_ACTOR)).rejects.toThrow();
  expect(await topUpRows(orgId)).toEqual(['0.001000000000', '0.000250000000']);
  expect(await wallets.ledgerBalanceNano(orgId)).toBe(FUNDED + TOP_UP);
}

describe('a wallet top-up whose Redis step failed after its commit', () => {
  it("is in the live balance at the wallet's next read, once, and spendable", async () => {
    const orgId = await fundedOrg('topup-read');
    await failedTopUp(orgId);
    // What the dashboard and `gw wallet show` print (and the retry's 409 says to check).
    expect(await readWallet(wallets, orgId)).toMatchObject({
      balance: '0.001250000000',
      available: '0.001250000000',
    });
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP));
    expect(
      await money.budget.reserve({
        requestId: newRequestId(),
        accounts: walletOnly(orgId),
        amountNano: FUNDED + TOP_UP,
      }),
    ).toMatchObject({ kind: 'held' });
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
  });

  it('is spendable by the next request the wallet alone could not cover, once', async () => {
    const orgId = await fundedOrg('topup-request');
    await failedTopUp(orgId);
    const reserve = (amountNano: bigint) =>
      money.budget.reserve({ requestId: newRequestId(), accounts: walletOnly(orgId), amountNano });
    // A request the wallet covers without it leaves it owed (no extra work on that path).
    expect(await reserve(1n)).toMatchObject({ kind: 'held' });
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(1);
    expect(await reserve(FUNDED + TOP_UP - 1n)).toMatchObject({ kind: 'held' });
    expect(await reserve(1n)).toMatchObject({ kind: 'wallet_short', availableNano: 0n });
    expect(await readWallet(wallets, orgId)).toMatchObject({
      balance: '0.001250000000',
      reserved: '0.001250000000',
      available: '0.000000000000',
    });
  });

  it('is spendable by a request failed over to the system route the wallet alone could not cover, once', async () => {
    const orgId = await fundedOrg('topup-failover');
    await failedTopUp(orgId);
    // The org's own credential was rate limited before any byte went out; none is left, so
    // the request falls back to the system route, which the wallet pays.
    const failover = (amountNano: bigint) =>
      money.budget.failover({
        requestId: newRequestId(),
        accounts: walletOnly(orgId),
        failedCredentialId: 'cred_limited',
        cooldownUntilMs: Date.now() + 60_000,
        amountNano,
        failure: 'failed_over',
        upstreamStatus: 429,
      });
    expect(await failover(FUNDED + TOP_UP)).toEqual({ kind: 'system' });
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
    expect(await failover(1n)).toEqual({ kind: 'wallet_short', availableNano: 0n });
    expect(await readWallet(wallets, orgId)).toMatchObject({
      balance: '0.001250000000',
      reserved: '0.001250000000',
      available: '0.000000000000',
    });
    // The credential's cooldown was announced once, though the first request was asked twice.
    const notices = await redis.xrange(keys.usageStream(orgId), '-', '+');
    expect(
      notices.filter(([, fields]) => fields.includes('provider_credential.failed_over')),
    ).toHaveLength(1);
  });

  it('is in the live balance after the next top-up, once', async () => {
    const orgId = await fundedOrg('topup-next');
    await failedTopUp(orgId);
    await wallets.topUp(orgId, 1n, CLI_ACTOR);
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP + 1n));
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(FUNDED + TOP_UP + 1n);
  });

  it('a balance set after it sets the balance asked for', async () => {
    const orgId = await fundedOrg('topup-set');
    await failedTopUp(orgId);
    await wallets.setBalance(orgId, 700_000n, CLI_ACTOR);
    expect(await live(orgId)).toBe('700000');
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(700_000n);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.000700000000' });
  });

  it('Redis restarted empty before the next read: counted once, from the ledger', async () => {
    const orgId = await fundedOrg('topup-restart');
    await failedTopUp(orgId);
    // Every key of the org gone (a Redis restarted without persistence).
    for (const key of [keys.wallet(orgId), keys.walletPendingTopUps(orgId)]) await redis.del(key);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP));
  });

  it('the wallet lost and rebuilt before the next read: counted once', async () => {
    const orgId = await fundedOrg('topup-rebuilt');
    await failedTopUp(orgId);
    // The wallet alone went (a failover losing its last writes, say) and a request rebuilt it
    // from the ledger, which has the top-up; the mark names the wallet that went.
    await redis.del(keys.wallet(orgId));
    await money.loader.load(['wallet'], walletOnly(orgId));
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(1);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
    await wallets.topUp(orgId, 1n, CLI_ACTOR);
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP + 1n));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
  });

  it('gw reconcile adds it and reports the wallet consistent; a read after adds nothing', async () => {
    const orgId = await fundedOrg('topup-reconcile');
    await failedTopUp(orgId);
    const reconciler = new Reconciler(db, redis, keys, scripts, (org) =>
      wallets.applyOwedChanges(org),
    );
    const [result] = await reconciler.run({ orgId, repair: true });
    expect(result).toMatchObject({ org_id: orgId, status: 'consistent', drifts: [] });
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP));
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
  });

  it('a reconcile that cannot add it first does not repair the wallet by it', async () => {
    const orgId = await fundedOrg('topup-reconcile-mark');
    await failedTopUp(orgId);
    // A reconciler without the wallets' service (as a top-up between its commit and its
    // Redis step looks to it): the drift is reported, not repaired, while the mark is there.
    const [result] = await new Reconciler(db, redis, keys, scripts).run({ orgId, repair: true });
    expect(result).toMatchObject({
      status: 'drift',
      drifts: [{ account: 'wallet', drift: '-0.000250000000', repaired: false }],
    });
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
  });

  it('Redis failing before the commit fails the top-up, recording nothing', async () => {
    const orgId = await fundedOrg('topup-before');
    const failsBefore = createMoneyLayer({
      db,
      redis,
      keys,
      scripts: { ...scripts, walletTopUpPending: defineScripts(unreachable).walletTopUpPending },
      reservationTtlMs: 60_000,
    }).wallets;
    await expect(failsBefore.topUp(orgId, TOP_UP, CLI_ACTOR)).rejects.toThrow();
    expect(await topUpRows(orgId)).toEqual(['0.001000000000']);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001000000000' });
  });

  /** A top-up whose `afterMark` runs once it is marked owed, before its commit. */
  const markedThen = (afterMark: () => Promise<void>) =>
    createMoneyLayer({
      db,
      redis,
      keys,
      scripts: {
        ...scripts,
        walletTopUpPending: async (...call: Parameters<RedisScripts['walletTopUpPending']>) => {
          const outcome = await scripts.walletTopUpPending(...call);
          await afterMark();
          return outcome;
        },
      },
      reservationTtlMs: 60_000,
    }).wallets;

  it('a mark found while its top-up is still committing is added once, after the commit', async () => {
    const orgId = await fundedOrg('topup-committing');
    let resolving: Promise<boolean> | undefined;
    const topUp = markedThen(async () => {
      // Another instance reads the wallet now: it finds the mark, not yet the ledger row, and
      // waits for the wallet row's lock, which the top-up holds until its commit.
      let waiting!: () => void;
      const atLock = new Promise<void>((resolve) => (waiting = resolve));
      const reader = createMoneyLayer({
        db: hookedPool(db, [{ match: /FOR UPDATE/, step: async () => waiting() }]),
        redis,
        keys,
        scripts,
        reservationTtlMs: 60_000,
      }).wallets;
      resolving = reader.applyOwedChanges(orgId);
      await atLock;
    });
    await topUp.topUp(orgId, TOP_UP, CLI_ACTOR);
    await resolving;
    expect(await live(orgId)).toBe(String(FUNDED + TOP_UP));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001250000000' });
  });

  it('a top-up that failed between its mark and its commit adds nothing', async () => {
    const orgId = await fundedOrg('topup-rolled-back');
    const topUp = markedThen(() => Promise.reject(new Error('Postgres went away before COMMIT')));
    await expect(topUp.topUp(orgId, TOP_UP, CLI_ACTOR)).rejects.toThrow('before COMMIT');
    expect(await topUpRows(orgId)).toEqual(['0.001000000000']);
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(1);
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001000000000' });
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
  });

  it('a mark of a top-up that never committed is forgotten, adding nothing', async () => {
    const orgId = await fundedOrg('topup-uncommitted');
    await scripts.walletTopUpPending(
      { wallet: keys.wallet(orgId), pending: keys.walletPendingTopUps(orgId) },
      { transaction_id: '999999999999' },
    );
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.001000000000' });
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
  });
});
