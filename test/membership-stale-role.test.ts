// A membership change is judged by the role its maker holds when it runs, against the real
// Postgres: the router authenticates a request (with the caller's role then) before the
// change locks the organization's memberships, and an owner demoted, or a member removed,
// in between must not act with the role they lost.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { changeRole, getMember, removeMember } from '../src/accounts/members.js';
import { createUser, type Role } from '../src/accounts/users.js';
import { ApiKeyStore } from '../src/auth/api-key-store.js';
import { createDbPool } from '../src/db/pool.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('members');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const apiKeys = new ApiKeyStore(db, redis, createRedisKeys(prefix), 30_000);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

const PASSWORD = 'correct horse battery staple';

/** An organization (its first owner's personal one) with members of these roles, in order. */
async function organization(...roles: Role[]): Promise<{ orgId: string; users: string[] }> {
  const email = (): string => `member-${randomBytes(5).toString('hex')}@example.com`;
  const first = await createUser(db, { email: email(), password: PASSWORD });
  const orgId = first.personal_org_id;
  const users = [first.user_id];
  for (const role of roles) {
    const actor = { userId: first.user_id };
    const user = await createUser(db, {
      email: email(),
      password: PASSWORD,
      membership: { orgId, role, actor },
    });
    users.push(user.user_id);
  }
  return { orgId, users };
}

const roleOf = async (orgId: string, userId: string): Promise<Role | undefined> =>
  (await getMember(db, orgId, userId))?.role;

describe('a membership change made with a role its maker has lost since', () => {
  it('an owner demoted to admin cannot make an owner, nor remove one', async () => {
    const {
      orgId,
      users: [owner, demoted, otherOwner, member],
    } = await organization('owner', 'owner', 'member');
    // authenticated as an owner; demoted before the change runs
    const stale = { userId: demoted!, role: 'owner' as const };
    await changeRole(db, apiKeys, { userId: owner!, role: 'owner' }, orgId, demoted!, 'admin');
    await expect(changeRole(db, apiKeys, stale, orgId, member!, 'owner')).rejects.toMatchObject({
      kind: 'forbidden',
    });
    await expect(removeMember(db, apiKeys, stale, orgId, otherOwner!)).rejects.toMatchObject({
      kind: 'forbidden',
    });
    expect(await roleOf(orgId, member!)).toBe('member');
    expect(await roleOf(orgId, otherOwner!)).toBe('owner');
  });

  it('an admin removed from the organization can change and remove no one there', async () => {
    const {
      orgId,
      users: [owner, removed, member],
    } = await organization('admin', 'member');
    const stale = { userId: removed!, role: 'admin' as const };
    await removeMember(db, apiKeys, { userId: owner!, role: 'owner' }, orgId, removed!);
    await expect(changeRole(db, apiKeys, stale, orgId, member!, 'viewer')).rejects.toMatchObject({
      kind: 'not_found',
    });
    await expect(removeMember(db, apiKeys, stale, orgId, member!)).rejects.toMatchObject({
      kind: 'not_found',
    });
    expect(await roleOf(orgId, member!)).toBe('member');
  });
});
