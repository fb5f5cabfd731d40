// `gw wallet topup` whose COMMIT's answer is lost — Postgres committed the top-up, then the
// connection dropped before the command heard it — failed with the bare connection error, and
// the operator who ran it again topped the wallet up twice. Each top-up now runs under an
// idempotency key (the one the operator passes with --idempotency-key, or one of its own), kept
// with the top-up's transaction by the commit fence, as the dashboard's top-up is (decision
// 560): the command asks its key again and finishes the top-up that committed (or, when nothing
// committed, makes it), and the same command run again with the same key tops up at most once.
// The lost answer is real: a relay in front of Postgres lets the top-up's COMMIT through and
// cuts the connection when Postgres answers it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { relayedTestDatabase, type FreezableRelay } from './support/freezable-relay.js';
import { deletePrefix, testRedis } from './support/services.js';
import { gwWallet, gwWalletError, gwWalletOutput } from './support/wallet-cli.js';

const prefix = uniquePrefix('topuplost');
const redis = testRedis();
const unreachable = testRedis();
const keys = createRedisKeys(prefix);
const db = createDbPool(TEST_DATABASE_URL, 4);
let relay: FreezableRelay;
let relayed: ReturnType<typeof createDbPool>;
/** The money layer's wallets over `pool` and `on` (the test's Redis unless another is given). */
const walletsOn = (pool: ReturnType<typeof createDbPool>, on = redis) =>
  createMoneyLayer({
    db: pool,
    redis: on,
    keys,
    scripts: defineScripts(on),
    reservationTtlMs: 60_000,
  }).wallets;
const wallets = walletsOn(db);

const FUNDED = 1_000_000n;

beforeAll(async () => {
  const through = await relayedTestDatabase();
  relay = through.relay;
  relayed = createDbPool(through.url, 4);
  await unreachable.quit();
});

afterAll(async () => {
  await relayed?.end();
  await relay?.close();
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

async function fundedOrg(name: string): Promise<string> {
  const orgId = await createOrganization(db, `${name} ${prefix}`);
  await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
  return orgId;
}

async function topUps(orgId: string): Promise<string[]> {
  const { rows } = await db.query<{ amount: string }>(
    `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows.map((row) => row.amount);
}

const live = (orgId: string) => redis.hget(keys.wallet(orgId), 'balance');
const balanceOf = (printed: string) => (JSON.parse(printed) as { balance: string }).balance;

describe("gw wallet topup whose COMMIT's answer is lost", () => {
  it('finds the top-up committed under its key and finishes it: topped up once', async () => {
    const orgId = await fundedOrg('lost');
    relay.loseCommitAnswerAfter('INSERT INTO wallet_transactions');
    const printed = await gwWalletOutput(relayed, walletsOn(relayed), [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
    ]);
    expect(printed.stderr).toMatch(
      /^the top-up's answer was lost \(Connection terminated unexpectedly\); its idempotency key [0-9a-f-]{36} says it was made, once\n$/,
    );
    expect(balanceOf(printed.stdout)).toBe('0.001250000000');
    expect(await topUps(orgId)).toEqual(['0.001000000000', '0.000250000000']);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });

  it('cut before its COMMIT reached Postgres finds nothing committed under its key and tops up, once', async () => {
    const orgId = await fundedOrg('never');
    relay.loseCommitAnswerAfter('INSERT INTO wallet_transactions', { commitReaches: false });
    const printed = await gwWalletOutput(relayed, walletsOn(relayed), [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
    ]);
    expect(printed.stderr).toBe('');
    expect(balanceOf(printed.stdout)).toBe('0.001250000000');
    expect(await topUps(orgId)).toEqual(['0.001000000000', '0.000250000000']);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);
  });

  it('whose key, asked again, answers a conflict says which key to run it again with', async () => {
    // The lost COMMIT's answer, then Postgres refusing the write that marks the key failed:
    // the key is still held when the command asks it again, and answers 409 gw_conflict. The
    // key is the command's own: an error without it leaves the operator only a new key.
    const orgId = await fundedOrg('held');
    relay.loseCommitAnswerAfter('INSERT INTO wallet_transactions');
    const refusing = hookedPool(relayed, [
      {
        match: /^UPDATE idempotency_keys SET state = 'failed'/,
        step: () => Promise.reject(new Error('Connection terminated unexpectedly')),
      },
    ]);
    const { message } = await gwWalletError(refusing, walletsOn(refusing), [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
    ]);
    expect(message).toMatch(
      /^whether the top-up was made is unknown \(Connection terminated unexpectedly\); its idempotency key [0-9a-f-]{36}, asked again, answered: a run of gw wallet topup with --idempotency-key [0-9a-f-]{36} is still under way: it has made the top-up and not yet recorded its answer; run the command again in a moment for its answer: run the same command again with --idempotency-key [0-9a-f-]{36}; it tops up once at most$/,
    );
    const key = /--idempotency-key ([0-9a-f-]{36})/.exec(message)![1]!;
    // Run again with that key: nothing added a second time.
    await gwWallet(db, wallets, [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
      '--idempotency-key',
      key,
    ]).catch(() => undefined);
    expect(await topUps(orgId)).toEqual(['0.001000000000', '0.000250000000']);
  });

  it('run again with the same --idempotency-key after the lost answer tops up once', async () => {
    const orgId = await fundedOrg('again');
    const command = [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
      '--idempotency-key',
      `ref-${prefix}`,
    ];
    relay.loseCommitAnswerAfter('INSERT INTO wallet_transactions');
    const first = await gwWallet(relayed, walletsOn(relayed), command);
    expect(balanceOf(first)).toBe('0.001250000000');
    const again = await gwWalletOutput(db, wallets, command);
    expect(again.stderr).toBe(
      `the top-up with idempotency key ref-${prefix} was made already: nothing added this time\n`,
    );
    expect(balanceOf(again.stdout)).toBe('0.001250000000');
    expect(await topUps(orgId)).toEqual(['0.001000000000', '0.000250000000']);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));

    // The key with another amount is another top-up: refused, nothing added.
    const other = await gwWalletError(db, wallets, [
      ...command.slice(0, 4),
      '0.5',
      ...command.slice(5),
    ]);
    expect(other.code).toBe('gw_idempotency_key_reused');
    expect(await topUps(orgId)).toHaveLength(2);

    // Another key is another top-up.
    await gwWallet(db, wallets, [...command.slice(0, 6), `ref-${prefix}-2`]);
    expect(await topUps(orgId)).toHaveLength(3);
  });
});

describe('gw wallet topup failing twice before anything committed', () => {
  it('says the top-up was not made, not that it may have been', async () => {
    // Redis refuses before the top-up's transaction: both runs free their key, nothing made.
    const orgId = await fundedOrg('refused');
    const failed = await gwWalletError(db, walletsOn(db, unreachable), [
      'topup',
      '--org-id',
      orgId,
      '--amount',
      '0.00025',
    ]);
    expect(failed.code).toBe('gw_unavailable');
    expect(failed.message).toBe(
      'the top-up was not made (Connection is closed.): nothing was recorded; run the command again',
    );
    expect(await topUps(orgId)).toEqual(['0.001000000000']);
  });
});
