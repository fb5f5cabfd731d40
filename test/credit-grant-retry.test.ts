// A credit grant is recorded in Postgres, then applied to the user's live credits in Redis.
// When Redis fails between the two (here: a client whose connection is closed), the caller gets
// an error and retries: a replay of the grant's Idempotency-Key applies what Redis missed, so
// the grant becomes spendable, as its answer says (decision 499). A revocation takes the grant
// out of Redis before it commits, so a Redis failure fails it whole (decision 537); one an
// earlier version committed without its Redis step is applied there when sent again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { monthlyPeriod } from '../src/periods.js';
import { ProductUserManagement, type CreditGrantInput } from '../src/product-users/management.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('grantretry');
const redis = testRedis();
const unreachable = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const publisher = invalidationPublisher(redis, keys.invalidationChannel());
const management = new ProductUserManagement(db, redis, keys, scripts, publisher);
/** The same service on an instance whose Redis connection is gone. */
const cutOff = new ProductUserManagement(
  db,
  unreachable,
  keys,
  defineScripts(unreachable),
  publisher,
);

beforeAll(async () => {
  await unreachable.quit();
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** A product user under an enforced cap of 0 (credits pay everything), credits loaded. */
async function creditOnlyUser(name: string): Promise<{ orgId: string; accounts: RequestAccounts }> {
  const orgId = await createOrganization(db, name);
  const appId = await createApp(db, orgId, `${name}-app`);
  const { user } = await management.upsert({ orgId, appId, externalUserId: name });
  const accounts: RequestAccounts = {
    orgId,
    appConnectionId: 'conn_a',
    orgCap: null,
    connectionCap: null,
    user: {
      productUserId: user.id,
      capNano: 0n,
      creditMode: 'enforce',
      period: monthlyPeriod(new Date(), null),
    },
    walletPays: false,
    credentials: null,
  };
  // The user's first request loads their account and credits (none yet).
  expect(
    await store.reserve({ requestId: newRequestId(), accounts, amountNano: 1n }),
  ).toMatchObject({ kind: 'allowance_short', creditsNano: 0n });
  return { orgId, accounts };
}

const grantOf = (orgId: string, accounts: RequestAccounts, idempotencyKey: string | null) =>
  ({
    orgId,
    productUserId: accounts.user!.productUserId,
    amountNano: 50n,
    currency: 'USD',
    expiresAt: null,
    reason: null,
    idempotencyKey,
  }) satisfies CreditGrantInput;

describe('a credit change whose Redis step failed, retried', () => {
  it('a grant replayed by its Idempotency-Key becomes spendable, once', async () => {
    const { orgId, accounts } = await creditOnlyUser('grant-replay');
    const input = grantOf(orgId, accounts, 'grant-key-1');
    await expect(cutOff.grantCredits(input)).rejects.toThrow();
    expect(await management.grantCredits(input)).toMatchObject({ created: false });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 51n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 50n });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 50n }),
    ).toMatchObject({ kind: 'held' });
    // Replayed again: still the one grant of 50, all of it held now.
    expect(await management.grantCredits(input)).toMatchObject({ created: false });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 50n, availableNano: 0n });
  });

  it('a replay of a grant Redis had gives back nothing of what was spent', async () => {
    const { orgId, accounts } = await creditOnlyUser('grant-replay-spent');
    const input = grantOf(orgId, accounts, 'grant-key-2');
    expect(await management.grantCredits(input)).toMatchObject({ created: true });
    const requestId = newRequestId();
    await store.reserve({ requestId, accounts, amountNano: 30n });
    await store.settle(
      usageRecord(orgId, 30n, {
        requestId,
        appConnectionId: 'conn_a',
        productUserId: accounts.user!.productUserId,
        reservedNano: 30n,
      }),
      accounts,
    );
    expect(await management.grantCredits(input)).toMatchObject({ created: false });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 21n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 20n });
  });

  it('a replay of a grant that has expired gives back nothing of what was spent (decision 530)', async () => {
    const { orgId, accounts } = await creditOnlyUser('grant-replay-expired');
    const productUserId = accounts.user!.productUserId;
    const input = {
      ...grantOf(orgId, accounts, 'grant-key-expired'),
      expiresAt: new Date(Date.now() + 3_600_000),
    };
    const granted = await management.grantCredits(input);
    if ('keyReused' in granted) throw new Error('a first grant cannot reuse its key');
    const lasting = await management.grantCredits({
      ...grantOf(orgId, accounts, null),
      amountNano: 100n,
    });
    if ('keyReused' in lasting) throw new Error('a grant without a key cannot reuse one');
    // 30 of the expiring grant's 50 spent (it expires first, so it pays first)
    const spent = newRequestId();
    await store.reserve({ requestId: spent, accounts, amountNano: 30n });
    await store.settle(
      usageRecord(orgId, 30n, {
        requestId: spent,
        appConnectionId: 'conn_a',
        productUserId,
        reservedNano: 30n,
      }),
      accounts,
    );
    // A request admitted an hour ago, before the grant expired, still runs (its holds kept:
    // decision 498); the grant expires, and the user's credits are read again from the
    // ledger, which has no expired grant.
    const running = newRequestId();
    expect(await store.reserve({ requestId: running, accounts, amountNano: 40n })).toMatchObject({
      kind: 'held',
    });
    const admittedAt = new Date(Date.now() - 3_600_000);
    // (the grant as if made to expire a minute after that admission, a while ago)
    const expiresAt = new Date(admittedAt.getTime() + 60_000);
    await db.query(`UPDATE credit_grants SET expires_at = $2 WHERE id = $1`, [
      granted.grant.grant_id,
      expiresAt,
    ]);
    await redis.del(
      keys.userCredits(orgId, productUserId, 'USD'),
      keys.userGrants(orgId, productUserId, 'USD'),
    );
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 101n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 100n });
    // The grant sent again: it must not come back whole, with the 30 spent of it
    expect(await management.grantCredits({ ...input, expiresAt })).toMatchObject({
      created: false,
    });
    await store.settle(
      usageRecord(orgId, 40n, {
        requestId: running,
        appConnectionId: 'conn_a',
        productUserId,
        reservedNano: 40n,
        createdAt: admittedAt,
      }),
      accounts,
    );
    // the lasting grant paid it: the expired one had nothing left to pay with in Redis
    expect(
      await redis.hget(
        keys.userCredits(orgId, productUserId, 'USD'),
        `g:${lasting.grant.grant_id}`,
      ),
    ).toBe('60');
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 61n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 60n });
  });

  it('a revocation sent again stops the grant being spent', async () => {
    const { orgId, accounts } = await creditOnlyUser('revoke-retry');
    const granted = await management.grantCredits(grantOf(orgId, accounts, null));
    if ('keyReused' in granted) throw new Error('a grant without a key cannot reuse one');
    const grantId = granted.grant.grant_id;
    // As a revocation of an earlier version left it when its Redis step failed after its
    // commit (a revocation now takes the grant out of Redis before it commits: decision 537).
    await db.query(
      `UPDATE credit_grants SET status = 'revoked', revoked_at = now() WHERE id = $1`,
      [grantId],
    );
    // Sent again: answered as revoked already (409 on the dashboard), and applied in Redis.
    expect(await management.revokeGrant(grantId, { userId: 'usr_admin' }, orgId)).toMatchObject({
      code: 'gw_conflict',
    });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 0n });
  });

  it('a revocation whose Redis step failed, never sent again, leaves the ledger and the live credits agreeing (decision 537)', async () => {
    const { orgId, accounts } = await creditOnlyUser('revoke-once');
    const granted = await management.grantCredits(grantOf(orgId, accounts, null));
    if ('keyReused' in granted) throw new Error('a grant without a key cannot reuse one');
    const grantId = granted.grant.grant_id;
    // The operator is told it failed; the dashboard's grant list is what they look at next.
    await expect(cutOff.revokeGrant(grantId, { userId: 'usr_admin' }, orgId)).rejects.toThrow();
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM credit_grants WHERE id = $1',
      [grantId],
    );
    const refused = await store.reserve({ requestId: newRequestId(), accounts, amountNano: 51n });
    // Not revoked (the list shows it active, so it is revoked again), and still spendable: not
    // revoked in the ledger and spendable all the same.
    expect({ status: rows[0]!.status, refused }).toMatchObject({
      status: 'active',
      refused: { kind: 'allowance_short', creditsNano: 50n },
    });
    // Revoked again, with Redis there: revoked in both.
    expect(await management.revokeGrant(grantId, { userId: 'usr_admin' }, orgId)).toMatchObject({
      status: 'revoked',
    });
    expect(
      await store.reserve({ requestId: newRequestId(), accounts, amountNano: 1n }),
    ).toMatchObject({ kind: 'allowance_short', creditsNano: 0n });
  });
});
