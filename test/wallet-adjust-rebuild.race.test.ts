// A wallet top-up or balance set (`gw wallet topup|set`, the dashboard's top-up) that lands
// while the wallet is being rebuilt from Postgres: each interleaving of the change's Postgres
// commit and Redis write with the rebuild's snapshot, ledger sum and install, driven one by
// one on the real Redis and Postgres, ends with the live balance counting the change exactly
// once, without `gw reconcile` (docs/decisions.md, 301).
import { afterAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { topUpWallet } from '../src/admin/wallet.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { isGwError } from '../src/errors.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool, hookedScripts, type Step } from './support/interleave.js';
import { usageRecord, walletAccounts } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('walletadj');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 6);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
/** Settles, and the changes not under a hook, go through this layer. */
const plain = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const writer = testUsageWriter(writerRedis, keys, db, 'wallet-adjust-race', {
  claimIdleMs: 60_000,
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await db.end();
});

const LEDGER_SUM = /usage_wallet_totals/;
const TOP_UP = 50_000n;
const SET_TO = 777_000n;

const walletOnly = (orgId: string): RequestAccounts =>
  walletAccounts({ orgId, appConnectionId: `conn_${orgId}` });

async function settle(orgId: string, costNano: bigint): Promise<void> {
  const record = usageRecord(orgId, costNano, {
    requestId: newRequestId(),
    appConnectionId: `conn_${orgId}`,
    walletCostNano: costNano,
    reservedNano: 0n,
  });
  expect(await plain.budget.settle(record, walletOnly(orgId))).toBe('settled');
}

const drain = async (): Promise<void> => {
  await writer.drainOnce();
};

const live = async (orgId: string): Promise<bigint> =>
  BigInt((await redis.hget(keys.wallet(orgId), 'balance')) ?? 'NaN');

/**
 * An org funded with 1,000,000 nano that spent 3,000 (in the ledger) and 4,000 (settled, still
 * in the stream), whose wallet then left Redis: its next use rebuilds it at 993,000.
 */
async function orgWithLostWallet(): Promise<string> {
  const orgId = await createOrganization(db, `wallet adjust ${prefix}`);
  await plain.wallets.topUp(orgId, 1_000_000n);
  await plain.wallets.loadIntoRedis(orgId);
  await settle(orgId, 1_000n);
  await settle(orgId, 2_000n);
  await drain();
  await settle(orgId, 4_000n);
  await redis.del(keys.wallet(orgId));
  return orgId;
}

/** The wallet's rebuild, with `beforeSum` run after its snapshot and `beforeInstall` after its sum. */
async function rebuild(orgId: string, hooks: { beforeSum?: Step; beforeInstall?: Step } = {}) {
  const { loader } = createMoneyLayer({
    db: hookedPool(db, hooks.beforeSum ? [{ match: LEDGER_SUM, step: hooks.beforeSum }] : []),
    redis,
    keys,
    scripts: hookedScripts(scripts, (name) => name === 'accountRebuild', hooks.beforeInstall),
    reservationTtlMs: 60_000,
  });
  await loader.load(['wallet'], walletOnly(orgId));
}

/**
 * `gw wallet topup` of TOP_UP, with `betweenCommitAndAdd` run after its Postgres commit and
 * before its Redis write (the wallet-topup-apply script).
 */
async function topUp(orgId: string, betweenCommitAndAdd?: Step): Promise<void> {
  const { wallets } = createMoneyLayer({
    db,
    redis,
    keys,
    scripts: hookedScripts(scripts, (name) => name === 'walletTopUpApply', betweenCommitAndAdd),
    reservationTtlMs: 60_000,
  });
  const outcome = await topUpWallet(wallets, orgId, TOP_UP, CLI_ACTOR);
  expect(isGwError(outcome)).toBe(false);
}

const setBalance = async (orgId: string): Promise<void> => {
  await plain.wallets.setBalance(orgId, SET_TO, CLI_ACTOR);
};

/** The live balance is the ledger's, exactly; and traffic after it is charged as usual. */
async function expectExact(orgId: string, expected: bigint): Promise<void> {
  await drain();
  expect(await live(orgId)).toBe(expected);
  expect(await plain.wallets.ledgerBalanceNano(orgId)).toBe(expected);
  await settle(orgId, 7n);
  await drain();
  expect(await live(orgId)).toBe(expected - 7n);
  expect(await plain.wallets.ledgerBalanceNano(orgId)).toBe(expected - 7n);
}

async function topUpRows(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ amount: string }>(
    `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => row.amount);
}

describe('a wallet top-up while the wallet is rebuilt', () => {
  const AFTER = 993_000n + TOP_UP;

  it('committed after the snapshot, before the ledger sum: counted once', async () => {
    const orgId = await orgWithLostWallet();
    await rebuild(orgId, { beforeSum: () => topUp(orgId) });
    await expectExact(orgId, AFTER);
  });

  it('committed between the ledger sum and the install: counted once', async () => {
    const orgId = await orgWithLostWallet();
    await rebuild(orgId, { beforeInstall: () => topUp(orgId) });
    await expectExact(orgId, AFTER);
  });

  it('committed before a whole rebuild that lands before its Redis add: counted once', async () => {
    const orgId = await orgWithLostWallet();
    await topUp(orgId, () => rebuild(orgId));
    await expectExact(orgId, AFTER);
    expect(await topUpRows(orgId)).toEqual(['0.001000000000', '0.000050000000']);
  });

  it('committed before the snapshot, added before the install: counted once', async () => {
    const orgId = await orgWithLostWallet();
    let atInstall!: () => void;
    const reachedInstall = new Promise<void>((resolve) => (atInstall = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let rebuilt: Promise<void> | undefined;
    await topUp(orgId, async () => {
      rebuilt = rebuild(orgId, {
        beforeInstall: async () => {
          atInstall();
          await released;
        },
      });
      // A rebuild that finds the wallet in Redis when it lists it (ensureLive put it there)
      // stops there, never reaching its install.
      await Promise.race([reachedInstall, rebuilt]);
    });
    release();
    await rebuilt;
    await expectExact(orgId, AFTER);
  });
});

describe('a wallet balance set while the wallet is rebuilt', () => {
  it('recorded after the snapshot, before the ledger sum: the balance is the one set', async () => {
    const orgId = await orgWithLostWallet();
    await rebuild(orgId, { beforeSum: () => setBalance(orgId) });
    await expectExact(orgId, SET_TO);
  });

  it('recorded between the ledger sum and the install: the balance is the one set', async () => {
    const orgId = await orgWithLostWallet();
    await rebuild(orgId, { beforeInstall: () => setBalance(orgId) });
    await expectExact(orgId, SET_TO);
  });
});
