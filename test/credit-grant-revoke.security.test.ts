// A credit grant revoked for one organization is never another organization's: the service
// the dashboard revokes through takes the organization the caller acts in, and a grant of
// any other is left as it was (in Postgres, in the live credits, in the audit log). The CLI's
// operator names no organization. Real Redis and Postgres, in process.
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { invalidationPublisher } from '../src/cache/invalidation.js';
import { createDbPool } from '../src/db/pool.js';
import { ProductUserManagement } from '../src/product-users/management.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('grant-revoke');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const management = new ProductUserManagement(
  db,
  redis,
  keys,
  defineScripts(redis),
  invalidationPublisher(redis, keys.invalidationChannel()),
);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** A user of a new organization with an active grant of 1 USD. */
async function grantedUser(label: string) {
  const orgId = await createOrganization(db, `revoke-${label}`);
  const appId = await createApp(db, orgId, `revoke-${label}-app`);
  const { user } = await management.upsert({ orgId, appId, externalUserId: 'holder' });
  const granted = await management.grantCredits({
    orgId,
    productUserId: user.id,
    amountNano: 1_000_000_000n,
    currency: 'USD',
    expiresAt: null,
    reason: null,
    idempotencyKey: null,
  });
  if ('keyReused' in granted) throw new Error('a grant without a key cannot reuse one');
  return { orgId, userId: user.id, grantId: granted.grant.grant_id };
}

async function grantState(orgId: string, userId: string, grantId: string) {
  const { rows } = await db.query<{ status: string }>(
    'SELECT status FROM credit_grants WHERE id = $1',
    [grantId],
  );
  const audit = await db.query<{ org_id: string; user_id: string; action: string }>(
    'SELECT org_id, user_id, action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
    [grantId],
  );
  // What a new request may spend: the grants listed in the user's live credits.
  const live = await redis.zscore(keys.userGrants(orgId, userId, 'USD'), grantId);
  return { status: rows[0]?.status, live: live !== null, audit: audit.rows };
}

describe('revoking a credit grant', () => {
  it("for another organization than the grant's changes nothing and answers no grant", async () => {
    const owner = await grantedUser('owner');
    const other = await grantedUser('other');
    const member = { userId: 'usr_member_of_other' };

    expect(await management.revokeGrant(owner.grantId, member, other.orgId)).toMatchObject({
      code: 'gw_not_found',
    });
    expect(await grantState(owner.orgId, owner.userId, owner.grantId)).toEqual({
      status: 'active',
      live: true,
      audit: [],
    });

    const revoked = await management.revokeGrant(owner.grantId, member, owner.orgId);
    expect(revoked).toMatchObject({ grant_id: owner.grantId, status: 'revoked' });
    expect(await grantState(owner.orgId, owner.userId, owner.grantId)).toEqual({
      status: 'revoked',
      live: false,
      audit: [{ org_id: owner.orgId, user_id: member.userId, action: 'credit_grant.revoke' }],
    });
  });

  it("for no organization (the CLI's operator) revokes it and audits it in the grant's", async () => {
    const owner = await grantedUser('cli');
    const revoked = await management.revokeGrant(owner.grantId, { userId: 'cli' }, null);
    expect(revoked).toMatchObject({ grant_id: owner.grantId, status: 'revoked' });
    expect(await grantState(owner.orgId, owner.userId, owner.grantId)).toEqual({
      status: 'revoked',
      live: false,
      audit: [{ org_id: owner.orgId, user_id: 'cli', action: 'credit_grant.revoke' }],
    });
    expect(await management.revokeGrant(owner.grantId, { userId: 'cli' }, null)).toMatchObject({
      code: 'gw_conflict',
      message: 'this credit grant is already revoked',
    });
  });
});
