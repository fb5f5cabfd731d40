// gw reconcile against wallet top-ups landing in its measurements (decision 563). A top-up is
// committed in Postgres, then added to the live wallet; a measurement reads the ledger in a
// snapshot, then the live wallet. One committed after the snapshot and added before the live
// read is in the live balance and not in the ledger: a drift of its amount that is not one.
// Two top-ups of the same amount doing so in the two measurements a repair takes agreed, and
// the repair took the second away from the live wallet.
import { afterAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { Reconciler } from '../src/billing/reconcile.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { hookedPool } from './support/interleave.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('reconcile-topup');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { wallets } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** A measurement's ledger snapshot, taken (read-only, REPEATABLE READ) by its first statement. */
const SNAPSHOT = /^BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY/;

/** What the ledger says the wallet holds (no usage: its top-ups), in nano-units. */
async function ledgerBalance(orgId: string): Promise<bigint> {
  const { rows } = await db.query<{ nano: string }>(
    `SELECT (sum(amount) * 1000000000)::bigint::text AS nano
       FROM wallet_transactions WHERE org_id = $1`,
    [orgId],
  );
  return BigInt(rows[0]!.nano);
}

describe('gw reconcile --repair while top-ups land', () => {
  it('repairs no top-up away: one added between a measurement snapshot and its Redis read, twice in a row', async () => {
    const orgId = await createOrganization(db, `reconcile-topup ${prefix}`);
    await wallets.topUp(orgId, 1_000_000n, CLI_ACTOR);
    const topUp = async () => {
      await wallets.topUp(orgId, 250_000n, CLI_ACTOR);
    };
    // Each of the two measurements a repair takes: a top-up of the same amount committed and
    // added to the live wallet once its snapshot is taken, before it reads Redis.
    const reconciler = new Reconciler(
      hookedPool(db, [
        { match: SNAPSHOT, after: true, step: topUp },
        { match: SNAPSHOT, after: true, step: topUp },
      ]),
      redis,
      keys,
      scripts,
      (org) => wallets.applyOwedChanges(org),
    );
    const [result] = await reconciler.run({ orgId, repair: true });
    expect(result).toMatchObject({ org_id: orgId, status: 'consistent', drifts: [] });
    // Both top-ups are spendable: the live wallet is what the ledger says, 1,500,000.
    expect(await ledgerBalance(orgId)).toBe(1_500_000n);
    expect(await redis.hget(keys.wallet(orgId), 'balance')).toBe('1500000');
    expect(await new Reconciler(db, redis, keys, scripts).run({ orgId, repair: false })).toEqual([
      expect.objectContaining({ status: 'consistent' }),
    ]);
  });
});
