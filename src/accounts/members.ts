// Members of an organization: list, read one, add an existing dashboard user by e-mail (the
// operator's CLI only: the dashboard invites, see invitations.ts), change a role, remove. An
// organization always keeps an owner; only owners make or unmake owners; a user stays the
// owner of their personal organization. Every change is audited in the same transaction. A member who leaves, or drops below the role
// that may connect apps, takes the OAuth connections they approved there with them: revoked
// in the same transaction, their tokens refused by every instance once it commits.
import {
  invalidateConnectionsKeys,
  revokeOAuthConnectionsApprovedBy,
} from '../admin/connections.js';
import { recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import {
  APP_CONNECTING_ROLE,
  insertMembership,
  findUserByEmail,
  roleAtLeast,
  type Role,
} from './users.js';

export interface MemberRow {
  readonly id: string; // the user's id (the page key)
  readonly email: string;
  readonly role: Role;
  readonly created_at: Date;
  /** The organization is this member's personal one, which they always own (decision 359). */
  readonly personal_organization: boolean;
  readonly cursor_us: string;
}

export function memberView(row: MemberRow): Record<string, unknown> {
  return {
    user_id: row.id,
    email: row.email,
    role: row.role,
    personal_organization: row.personal_organization,
    created_at: row.created_at.toISOString(),
  };
}

/** A membership rule was broken; `kind` picks the answer (404 for a user that is not there). */
export class MembershipError extends Error {
  override readonly name = 'MembershipError';
  constructor(
    readonly kind: 'not_found' | 'conflict' | 'forbidden',
    message: string,
  ) {
    super(message);
  }
}

/** A member changing the membership list: who (for the audit log) and with which role. */
export interface MembershipActor extends Actor {
  readonly role: Role;
}

const SELECT_MEMBERS = `SELECT u.id, u.email, m.role, m.created_at,
       u.personal_org_id IS NOT DISTINCT FROM m.org_id AS personal_organization,
       (extract(epoch FROM m.created_at) * 1000000)::bigint::text AS cursor_us
  FROM org_memberships m JOIN dashboard_users u ON u.id = m.user_id`;

export function listMembers(
  db: DbPool,
  orgId: string,
  page: PageRequest,
): Promise<Page<MemberRow>> {
  return readPage(
    db,
    {
      select: SELECT_MEMBERS,
      where: 'm.org_id = $1',
      params: [orgId],
      createdAtColumn: 'm.created_at',
      idColumn: 'u.id',
    },
    page,
  );
}

/** One member of the organization, or null when the user is not a member there. */
export async function getMember(
  db: DbPool,
  orgId: string,
  userId: string,
): Promise<MemberRow | null> {
  const { rows } = await db.query<MemberRow>(
    `${SELECT_MEMBERS} WHERE m.org_id = $1 AND m.user_id = $2`,
    [orgId, userId],
  );
  return rows[0] ?? null;
}

/**
 * Makes an existing user a member at once. The operator's CLI only (trusted, and it knows
 * who has an account): a dashboard member invites instead, and the user accepts.
 */
export async function addMember(
  db: DbPool,
  actor: MembershipActor,
  orgId: string,
  email: string,
  role: Role,
): Promise<MemberRow> {
  if (role === 'owner' && actor.role !== 'owner') {
    throw new MembershipError('forbidden', 'only an owner can make someone an owner');
  }
  return withTransaction(db, async (client) => {
    const user = await findUserByEmail(client, email);
    if (!user) throw new MembershipError('not_found', 'no dashboard user with this e-mail');
    if (!(await insertMembership(client, actor, orgId, user.user_id, role))) {
      throw new MembershipError('conflict', 'this user is already a member');
    }
    return memberOf(client, orgId, user.user_id);
  });
}

export async function changeRole(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: MembershipActor,
  orgId: string,
  userId: string,
  role: Role,
): Promise<MemberRow> {
  const { member, revoked } = await withTransaction(db, async (client) => {
    const { current, actorRole } = await lockedRoles(client, orgId, userId, actor);
    if (!roleAtLeast(actorRole, 'admin')) {
      throw new MembershipError('forbidden', 'changing a role needs the admin role or higher');
    }
    if ((current === 'owner' || role === 'owner') && actorRole !== 'owner') {
      throw new MembershipError('forbidden', 'only an owner can make or unmake an owner');
    }
    if (current === 'owner' && role !== 'owner') await keepAnOwner(client, orgId);
    if (role !== 'owner') {
      await keepPersonalOwner(client, orgId, userId, 'their role there cannot change');
    }
    await client.query('UPDATE org_memberships SET role = $3 WHERE org_id = $1 AND user_id = $2', [
      orgId,
      userId,
      role,
    ]);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'member.change_role',
      objectType: 'member',
      objectId: userId,
      details: { from: current, to: role },
    });
    const revokedIds = roleAtLeast(role, APP_CONNECTING_ROLE)
      ? []
      : await revokeOAuthConnectionsApprovedBy(client, actor, { orgId, userId });
    return { member: await memberOf(client, orgId, userId), revoked: revokedIds };
  });
  await invalidateConnectionsKeys(db, apiKeys, revoked);
  return member;
}

/** The role that may remove another member (leaving takes none). */
const REMOVING_ROLE: Role = 'admin';

/** Whether `role` may remove another member whose role is `memberRole`. */
export function canRemoveMember(role: Role, memberRole: Role): boolean {
  return roleAtLeast(role, REMOVING_ROLE) && (memberRole !== 'owner' || role === 'owner');
}

export async function removeMember(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: MembershipActor,
  orgId: string,
  userId: string,
): Promise<void> {
  const revoked = await withTransaction(db, async (client) => {
    const { current, actorRole } = await lockedRoles(client, orgId, userId, actor);
    // Leaving is every member's right; removing someone else takes an admin (an owner, an owner).
    if (actor.userId !== userId && !canRemoveMember(actorRole, current)) {
      throw new MembershipError(
        'forbidden',
        roleAtLeast(actorRole, REMOVING_ROLE)
          ? 'only an owner can remove an owner'
          : 'removing another member needs the admin role or higher',
      );
    }
    if (current === 'owner') await keepAnOwner(client, orgId);
    await keepPersonalOwner(client, orgId, userId, 'they cannot leave it or be removed');
    await client.query('DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2', [
      orgId,
      userId,
    ]);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'member.remove',
      objectType: 'member',
      objectId: userId,
      details: { role: current },
    });
    return revokeOAuthConnectionsApprovedBy(client, actor, { orgId, userId });
  });
  await invalidateConnectionsKeys(db, apiKeys, revoked);
}

/**
 * The member's role and the actor's, with the organization's memberships locked against a
 * concurrent change. The actor's role is read here, not taken from when their request was
 * authenticated: an owner demoted (or a member removed) while the request waited acts as
 * what they are now.
 */
async function lockedRoles(
  client: DbClient,
  orgId: string,
  userId: string,
  actor: MembershipActor,
): Promise<{ current: Role; actorRole: Role }> {
  const roles = await lockMemberships(client, orgId);
  const actorRole = roles.get(actor.userId);
  if (!actorRole) {
    throw new MembershipError('not_found', 'no organization with this id in your organizations');
  }
  const current = roles.get(userId);
  if (!current)
    throw new MembershipError('not_found', 'no member with this id in the organization');
  return { current, actorRole };
}

/**
 * Every member's role in the organization, by user id, with its membership rows locked until
 * the transaction ends. Locking every membership row of the org serializes changes to it:
 * two owners cannot demote each other at once and leave none, and an invitation is made or
 * accepted against the roles as they are.
 */
export async function lockMemberships(
  client: DbClient,
  orgId: string,
): Promise<ReadonlyMap<string, Role>> {
  const { rows } = await client.query<{ user_id: string; role: Role }>(
    'SELECT user_id, role FROM org_memberships WHERE org_id = $1 FOR UPDATE',
    [orgId],
  );
  return new Map(rows.map((row) => [row.user_id, row.role]));
}

/**
 * A user's personal organization is theirs for good (their `personal_org_id` always names an
 * organization they own): refused when `orgId` is `userId`'s personal one.
 */
async function keepPersonalOwner(
  client: DbClient,
  orgId: string,
  userId: string,
  consequence: string,
): Promise<void> {
  const { rowCount } = await client.query(
    'SELECT 1 FROM dashboard_users WHERE id = $1 AND personal_org_id = $2',
    [userId, orgId],
  );
  if (rowCount) {
    throw new MembershipError(
      'conflict',
      `this is the member's personal organization, which they always own: ${consequence}`,
    );
  }
}

async function keepAnOwner(client: DbClient, orgId: string): Promise<void> {
  const { rows } = await client.query<{ owners: number }>(
    "SELECT count(*)::int AS owners FROM org_memberships WHERE org_id = $1 AND role = 'owner'",
    [orgId],
  );
  if ((rows[0]?.owners ?? 0) <= 1) {
    throw new MembershipError('conflict', 'an organization keeps at least one owner');
  }
}

async function memberOf(client: DbClient, orgId: string, userId: string): Promise<MemberRow> {
  const { rows } = await client.query<MemberRow>(
    `${SELECT_MEMBERS} WHERE m.org_id = $1 AND u.id = $2`,
    [orgId, userId],
  );
  return rows[0]!;
}
