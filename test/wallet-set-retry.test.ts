// A balance set (`gw wallet set`) changed the live balance in Redis first, then recorded the
// difference in Postgres, and moved the live balance back when Postgres refused: a Redis failing
// on that move back (two failures in a row) left the live balance set and the ledger not, until
// `gw reconcile --repair`. Now a set is recorded in Postgres first, marked owed to the live wallet
// before its commit, and applied after, as a top-up is (decision 521): whatever fails, the
// wallet's next read or change agrees with the ledger, the set counted once (decision 544).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { readWallet } from '../src/admin/wallet.js';
import { Reconciler } from '../src/billing/reconcile.js';
import type { WalletService } from '../src/billing/wallets.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts, type RedisScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { deletePrefix, testRedis } from './support/services.js';
import { gwWallet, gwWalletError, testWallets } from './support/wallet-cli.js';

const prefix = uniquePrefix('setretry');
const redis = testRedis();
const unreachable = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const cut = defineScripts(unreachable);

const layer = (overrides: Partial<RedisScripts> = {}, pool: DbPool = db): WalletService =>
  testWallets({ db: pool, redis, keys, scripts }, overrides);
const wallets = layer();

beforeAll(async () => {
  await unreachable.quit();
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

const FUNDED = 1_000_000n;
const TARGET = 400_000n;

async function fundedOrg(name: string): Promise<string> {
  const orgId = await createOrganization(db, `${name} ${prefix}`);
  await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
  return orgId;
}

const live = (orgId: string) => redis.hget(keys.wallet(orgId), 'balance');

async function setRows(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ amount: string }>(
    `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'set' ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => row.amount);
}

/** Live and ledger agree on `balanceNano`, read after read. */
async function agreeOn(orgId: string, balanceNano: bigint): Promise<void> {
  for (let read = 0; read < 2; read += 1) {
    expect((await wallets.liveBalance(orgId)).balanceNano).toBe(balanceNano);
  }
  expect(await live(orgId)).toBe(String(balanceNano));
  expect(await wallets.ledgerBalanceNano(orgId)).toBe(balanceNano);
}

describe('a balance set', () => {
  it('Postgres failing to record it, then Redis failing: live and ledger still agree, nothing set', async () => {
    const orgId = await fundedOrg('set-both-fail');
    const failing = layer(
      {
        // The set's Redis step after its commit fails.
        walletTopUpApply: cut.walletTopUpApply,
      },
      hookedPool(db, [
        {
          match: /INSERT INTO wallet_transactions/,
          values: (values) => values[1] === 'set',
          step: () => Promise.reject(new Error('Postgres went away')),
        },
      ]),
    );
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow();
    expect(await setRows(orgId)).toEqual([]);
    await agreeOn(orgId, FUNDED);
  });

  it('Redis failing after its commit: the next read sets it, once', async () => {
    const orgId = await fundedOrg('set-after-commit');
    const failing = layer({ walletTopUpApply: cut.walletTopUpApply });
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow();
    expect(await setRows(orgId)).toEqual(['-0.000600000000']);
    expect(await live(orgId)).toBe(String(FUNDED));
    expect(await readWallet(wallets, orgId)).toMatchObject({ balance: '0.000400000000' });
    await agreeOn(orgId, TARGET);
    // Set again (what an operator who saw the error does): the balance asked for, once more.
    await wallets.setBalance(orgId, TARGET, CLI_ACTOR);
    expect(await setRows(orgId)).toEqual(['-0.000600000000', '0.000000000000']);
    await agreeOn(orgId, TARGET);
  });

  it('gw wallet set whose Redis step failed says it was recorded, and the next show applies it once', async () => {
    const orgId = await fundedOrg('set-cli');
    const failing = layer({ walletTopUpApply: cut.walletTopUpApply });
    const failed = await gwWalletError(db, failing, [
      'set',
      '--org-id',
      orgId,
      '--amount',
      '0.0004',
    ]);
    const { rows } = await db.query<{ id: string }>(
      `SELECT id::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'set'`,
      [orgId],
    );
    expect(failed.code).toBe('gw_unavailable');
    expect(failed.message).toBe(
      `the balance set was recorded (wallet transaction ${rows[0]!.id}), but the live balance could not be changed after it: the wallet's next read (gw wallet show --org-id ${orgId}) or gw reconcile applies it, once; setting it again is safe too`,
    );
    const shown = JSON.parse(await gwWallet(db, wallets, ['show', '--org-id', orgId])) as {
      balance: string;
    };
    expect(shown.balance).toBe('0.000400000000');
    await agreeOn(orgId, TARGET);
  });

  it('Redis failing after its commit, the wallet then lost and rebuilt: set once, from the ledger', async () => {
    const orgId = await fundedOrg('set-rebuilt');
    const failing = layer({ walletTopUpApply: cut.walletTopUpApply });
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow();
    await redis.del(keys.wallet(orgId));
    await agreeOn(orgId, TARGET);
  });

  it('failing between its mark and its commit sets nothing, and its mark is forgotten', async () => {
    const orgId = await fundedOrg('set-rolled-back');
    const failing = layer({
      walletTopUpPending: async (...call: Parameters<RedisScripts['walletTopUpPending']>) => {
        await scripts.walletTopUpPending(...call);
        throw new Error('Postgres went away before COMMIT');
      },
    });
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow('before COMMIT');
    expect(await setRows(orgId)).toEqual([]);
    expect(await redis.hlen(keys.walletPendingSets(orgId))).toBe(1);
    await agreeOn(orgId, FUNDED);
    expect(await redis.hlen(keys.walletPendingSets(orgId))).toBe(0);
  });

  it('gw reconcile applies one whose Redis step failed and reports the wallet consistent', async () => {
    const orgId = await fundedOrg('set-reconcile');
    const failing = layer({ walletTopUpApply: cut.walletTopUpApply });
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow();
    const reconciler = new Reconciler(db, redis, keys, scripts, (org) =>
      wallets.applyOwedChanges(org),
    );
    const [result] = await reconciler.run({ orgId, repair: true });
    expect(result).toMatchObject({ org_id: orgId, status: 'consistent', drifts: [] });
    await agreeOn(orgId, TARGET);
  });

  it('a reconcile that cannot apply it first does not repair the wallet by it', async () => {
    const orgId = await fundedOrg('set-reconcile-mark');
    const failing = layer({ walletTopUpApply: cut.walletTopUpApply });
    await expect(failing.setBalance(orgId, TARGET, CLI_ACTOR)).rejects.toThrow();
    const [result] = await new Reconciler(db, redis, keys, scripts).run({ orgId, repair: true });
    expect(result).toMatchObject({
      status: 'drift',
      drifts: [{ account: 'wallet', drift: '0.000600000000', repaired: false }],
    });
    await agreeOn(orgId, TARGET);
  });

  it('made between a top-up’s commit and its Redis step sets the balance asked for', async () => {
    const orgId = await fundedOrg('set-mid-topup');
    const topUp = layer({
      walletTopUpApply: async (...call: Parameters<RedisScripts['walletTopUpApply']>) => {
        await wallets.setBalance(orgId, TARGET, CLI_ACTOR);
        return scripts.walletTopUpApply(...call);
      },
    });
    await topUp.topUp(orgId, 250_000n, CLI_ACTOR);
    await agreeOn(orgId, TARGET);
  });
});
