// `gw wallet` took --idempotency-key on every action and used it on `topup` alone: `set` ran
// again with the key (setting the balance a second time), `show` and `alert` ignored it, and
// nothing said so. Now `set` honours the key as `topup` does (recorded first and applied once,
// decision 544; the same key answers the first set once, another amount is refused), and an
// action refuses a flag it does not take, changing nothing (decision 574). The CLI's key
// messages name the flag and what differed, never the HTTP header (decision 575).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts, type RedisScripts } from '../src/redis/scripts.js';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { testRedis } from './support/services.js';
import { gwWallet, gwWalletError, gwWalletOutput, testWallets } from './support/wallet-cli.js';

const { prefix, redis } = isolatedContext('walletkey');
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const unreachable = testRedis();
const cut = defineScripts(unreachable);
const layer = (overrides: Partial<RedisScripts> = {}) =>
  testWallets({ db, redis, keys, scripts }, overrides);
const wallets = layer();

beforeAll(async () => {
  await unreachable.quit();
});

afterAll(async () => {
  await db.end();
});

const FUNDED = 1_000_000n;

async function fundedOrg(name: string): Promise<string> {
  const orgId = await createOrganization(db, `${name} ${prefix}`);
  await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
  return orgId;
}

/** The wallet's ledger, oldest first: kind and amount. */
async function ledger(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ kind: string; amount: string }>(
    `SELECT kind, amount::text FROM wallet_transactions WHERE org_id = $1 ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => `${row.kind} ${row.amount}`);
}

const live = (orgId: string) => redis.hget(keys.wallet(orgId), 'balance');
const balanceOf = (printed: string) => (JSON.parse(printed) as { balance: string }).balance;

describe('gw wallet show and alert', () => {
  it('refuse --idempotency-key (and any flag they do not take) and change nothing', async () => {
    const orgId = await fundedOrg('readonly');
    await gwWallet(db, wallets, ['alert', '--org-id', orgId, '--low-balance-threshold', '0.0005']);
    const show = await gwWalletError(db, wallets, [
      'show',
      '--org-id',
      orgId,
      '--idempotency-key',
      'k1',
    ]);
    expect({ code: show.code, message: show.message }).toEqual({
      code: 'gw_invalid_request',
      message:
        'gw wallet show takes no --idempotency-key: it changes nothing, so there is nothing to make once (the key is for topup and set)',
    });
    const alert = await gwWalletError(db, wallets, [
      'alert',
      '--org-id',
      orgId,
      '--low-balance-threshold',
      '0.0009',
      '--idempotency-key',
      'k1',
    ]);
    expect({ code: alert.code, message: alert.message }).toEqual({
      code: 'gw_invalid_request',
      message:
        'gw wallet alert takes no --idempotency-key: setting the threshold again sets the same threshold (the key is for topup and set)',
    });
    const amount = await gwWalletError(db, wallets, ['show', '--org-id', orgId, '--amount', '5']);
    expect(amount.message).toBe('gw wallet show takes no --amount');
    const threshold = await gwWalletError(db, wallets, [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '5',
      '--low-balance-threshold',
      '1',
    ]);
    expect(threshold.message).toBe('gw wallet topup takes no --low-balance-threshold');
    // Nothing changed: the threshold set before, the one top-up.
    const { rows } = await db.query<{ threshold: string }>(
      'SELECT low_balance_threshold::text AS threshold FROM wallets WHERE org_id = $1',
      [orgId],
    );
    expect(rows[0]!.threshold).toBe('0.000500000000');
    expect(await ledger(orgId)).toEqual(['topup 0.001000000000']);
  });
});

describe('gw wallet set --idempotency-key', () => {
  it('sets the balance once: the same key answers the first set, another amount is refused', async () => {
    const orgId = await fundedOrg('set-key');
    const command = ['set', '--org-id', orgId, '--amount', '0.0004', '--idempotency-key', 'k1'];
    const first = await gwWalletOutput(db, wallets, command);
    expect(first.stderr).toBe('');
    expect(balanceOf(first.stdout)).toBe('0.000400000000');
    // The balance moves on (a top-up); the same set with the same key is not made again.
    await wallets.topUp(orgId, 100_000n, CLI_ACTOR);
    const again = await gwWalletOutput(db, wallets, command);
    expect(again.stderr).toBe(
      'the balance set with idempotency key k1 was made already: nothing changed this time\n',
    );
    expect(again.stdout).toBe(first.stdout);
    expect(await ledger(orgId)).toEqual([
      'topup 0.001000000000',
      'set -0.000600000000',
      'topup 0.000100000000',
    ]);
    expect(await live(orgId)).toBe('500000');

    const other = await gwWalletError(db, wallets, [
      ...command.slice(0, 4),
      '0.0002',
      '--idempotency-key',
      'k1',
    ]);
    expect({ code: other.code, message: other.message }).toEqual({
      code: 'gw_idempotency_key_reused',
      message:
        '--idempotency-key k1 was already used by gw wallet set for this organization with another --amount: a key sets the balance once, to one amount; use a new key to set it to 0.0002',
    });
    expect(await ledger(orgId)).toHaveLength(3);
    expect(await live(orgId)).toBe('500000');

    // A key the header would refuse is refused by its flag's name, nothing set.
    const empty = await gwWalletError(db, wallets, [...command.slice(0, 6), '']);
    expect({ code: empty.code, message: empty.message }).toEqual({
      code: 'gw_invalid_request',
      message: '--idempotency-key: must be 1 to 255 characters',
    });
    expect(await ledger(orgId)).toHaveLength(3);

    // Another key is another set.
    await gwWallet(db, wallets, [...command.slice(0, 6), 'k2']);
    expect(await ledger(orgId)).toEqual([
      'topup 0.001000000000',
      'set -0.000600000000',
      'topup 0.000100000000',
      'set -0.000100000000',
    ]);
  });

  it('whose Redis step failed after its commit: run again with the key, it is finished, once', async () => {
    const orgId = await fundedOrg('set-key-owed');
    const command = ['set', '--org-id', orgId, '--amount', '0.0004', '--idempotency-key', 'k1'];
    const failed = await gwWalletError(
      db,
      layer({ walletTopUpApply: cut.walletTopUpApply }),
      command,
    );
    expect(failed.code).toBe('gw_unavailable');
    expect(failed.message).toMatch(/^the balance set was recorded \(wallet transaction \d+\)/);
    expect(await live(orgId)).toBe(String(FUNDED));
    const again = await gwWalletOutput(db, wallets, command);
    expect(again.stderr).toBe(
      'the balance set with idempotency key k1 was made already: nothing changed this time\n',
    );
    expect(balanceOf(again.stdout)).toBe('0.000400000000');
    expect(await ledger(orgId)).toEqual(['topup 0.001000000000', 'set -0.000600000000']);
    expect(await live(orgId)).toBe('400000');
  });
});

describe('gw wallet topup --idempotency-key reused with another amount', () => {
  it('names the flag and the amount, not the HTTP header', async () => {
    const orgId = await fundedOrg('topup-reused');
    await gwWallet(db, wallets, [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
      '--idempotency-key',
      'k1',
    ]);
    const other = await gwWalletError(db, wallets, [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.5',
      '--idempotency-key',
      'k1',
    ]);
    expect({ code: other.code, message: other.message }).toEqual({
      code: 'gw_idempotency_key_reused',
      message:
        '--idempotency-key k1 was already used by gw wallet topup for this organization with another --amount: a key tops up once, by one amount; use a new key to top up 0.5',
    });
    expect(await ledger(orgId)).toEqual(['topup 0.001000000000', 'topup 0.000250000000']);
  });
});

describe('gw wallet topup stopped after its commit, before its answer was kept', () => {
  it('run again with its key after the lease lapsed: answered as made, nothing added', async () => {
    // What a Ctrl-C between the top-up's COMMIT and the write keeping its answer leaves: the
    // key running, its change committed and named, its lease lapsing (decision 576). Played by
    // Postgres refusing that write; the lease's ten seconds are taken off the row.
    const orgId = await fundedOrg('stopped');
    const stopped = hookedPool(db, [
      {
        match: /^UPDATE idempotency_keys SET state = 'done'/,
        step: () => Promise.reject(new Error('the command was stopped')),
      },
    ]);
    const command = ['topup', '--org-id', orgId, '--amount', '0.00025', '--idempotency-key', 'k1'];
    const first = await gwWallet(stopped, wallets, command);
    expect(balanceOf(first)).toBe('0.001250000000');
    await db.query(
      `UPDATE idempotency_keys
          SET created_at = created_at - interval '11 seconds',
              lease_expires_at = lease_expires_at - interval '11 seconds'
        WHERE org_id = $1 AND key = 'k1'`,
      [orgId],
    );
    const again = await gwWalletOutput(db, wallets, command);
    expect(again.stderr).toBe(
      'the top-up with idempotency key k1 was made already: nothing added this time\n',
    );
    expect(balanceOf(again.stdout)).toBe('0.001250000000');
    // Kept: the next run replays it too.
    expect((await gwWalletOutput(db, wallets, command)).stdout).toBe(again.stdout);
    expect(await ledger(orgId)).toEqual(['topup 0.001000000000', 'topup 0.000250000000']);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });
});
