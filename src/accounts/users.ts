// Dashboard users and their organization memberships. Every new user gets a personal
// organization (with its wallet) that they own; OAuth connections will pay from it.
import { z } from 'zod';
import { createOrganization } from '../admin/provisioning.js';
import { recordAudit, type Actor } from '../audit/audit.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { newId } from '../ids.js';
import { hashPassword, passwordProblem } from './passwords.js';

export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** What each role may do: a role may do everything the roles below it may. */
const ROLE_RANK: Readonly<Record<Role, number>> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[minimum];
}

/**
 * The least role that may make an organization's wallet pay for an app by approving an OAuth
 * connection: the one that issues API keys, since the approval hands the app what amounts to
 * one. A user who loses it (or leaves) takes the connections they approved there with them.
 */
export const APP_CONNECTING_ROLE: Role = 'admin';

export const EMAIL_MAX_LENGTH = 254;
const emailSchema = z.email().max(EMAIL_MAX_LENGTH);

/**
 * A rule of the accounts domain was broken; the message says which (safe to show). A
 * `conflict` is an e-mail that already has a user.
 */
export class AccountRuleError extends Error {
  override readonly name = 'AccountRuleError';
  constructor(
    message: string,
    readonly conflict = false,
  ) {
    super(message);
  }
}

const EMAIL_TAKEN = 'email: a user with this e-mail exists';
/** Postgres' unique_violation: another transaction made the same e-mail meanwhile. */
const UNIQUE_VIOLATION = '23505';

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Whether a normalized e-mail is one an account may have (the rule of every user's e-mail). */
export function isAccountEmail(email: string): boolean {
  return emailSchema.safeParse(email).success;
}

export interface NewUser {
  readonly email: string;
  readonly password: string;
  /**
   * A self-service sign-up: the address is unverified (the operator's accounts are taken as
   * verified); `holdMs`, while gw sends mail, how long it holds the address unverified before
   * a new sign-up may take it over (decision 370), else null.
   */
  readonly signup?: { readonly holdMs: number | null };
  /** Also make the user a member of this existing organization, audited as `actor`'s change. */
  readonly membership?: { readonly orgId: string; readonly role: Role; readonly actor: Actor };
}

export interface CreatedUser {
  readonly user_id: string;
  readonly email: string;
  readonly personal_org_id: string;
  readonly org_ids: string[];
}

export async function createUser(db: DbPool, input: NewUser): Promise<CreatedUser> {
  const email = normalizeEmail(input.email);
  if (!isAccountEmail(email)) {
    throw new AccountRuleError('email: must be an e-mail address of at most 254 characters');
  }
  const problem = passwordProblem(input.password);
  if (problem) throw new AccountRuleError(problem);
  const passwordHash = await hashPassword(input.password);
  try {
    return await insertUser(db, input, email, passwordHash);
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) {
      throw new AccountRuleError(EMAIL_TAKEN, true);
    }
    throw error;
  }
}

async function insertUser(
  db: DbPool,
  input: NewUser,
  email: string,
  passwordHash: string,
): Promise<CreatedUser> {
  return withTransaction(db, async (client) => {
    const taken = await client.query('SELECT 1 FROM dashboard_users WHERE email = $1', [email]);
    if (taken.rowCount) throw new AccountRuleError(EMAIL_TAKEN, true);
    const { membership } = input;
    if (membership !== undefined) {
      const org = await client.query('SELECT 1 FROM organizations WHERE id = $1', [
        membership.orgId,
      ]);
      if (!org.rowCount)
        throw new AccountRuleError(
          `org-id: no organization with the id ${JSON.stringify(membership.orgId)}`,
        );
    }
    const personalOrgId = await createOrganization(client, `${email} (personal)`);
    const userId = newId('usr');
    await client.query(
      `INSERT INTO dashboard_users
         (id, email, password_hash, personal_org_id, email_verified_at, email_hold_until)
       VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN NULL ELSE now() END,
               now() + $6 * interval '1 millisecond')`,
      [
        userId,
        email,
        passwordHash,
        personalOrgId,
        input.signup !== undefined,
        input.signup?.holdMs ?? null,
      ],
    );
    await client.query(
      `INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, 'owner')`,
      [personalOrgId, userId],
    );
    const orgIds = [personalOrgId];
    if (membership !== undefined) {
      // Audited as the members page's "add member" is (the personal organization is not:
      // nobody else is in it).
      await insertMembership(client, membership.actor, membership.orgId, userId, membership.role);
      orgIds.push(membership.orgId);
    }
    return { user_id: userId, email, personal_org_id: personalOrgId, org_ids: orgIds };
  });
}

/** The user with this e-mail (trimmed, lower-cased), or null. */
export async function findUserByEmail(
  db: Pick<DbPool, 'query'>,
  email: string,
): Promise<{ user_id: string; email: string } | null> {
  const normalized = normalizeEmail(email);
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM dashboard_users WHERE email = $1',
    [normalized],
  );
  return rows[0] ? { user_id: rows[0].id, email: normalized } : null;
}

export interface LoginCandidate {
  readonly id: string;
  readonly passwordHash: string;
  /** Read with the hash: a session made from it ends if the password changes meanwhile. */
  readonly sessionEpoch: number;
}

export async function findLoginCandidate(
  db: DbPool,
  email: string,
): Promise<LoginCandidate | null> {
  const { rows } = await db.query<{ id: string; password_hash: string; session_epoch: number }>(
    'SELECT id, password_hash, session_epoch FROM dashboard_users WHERE email = $1',
    [normalizeEmail(email)],
  );
  const row = rows[0];
  return row
    ? { id: row.id, passwordHash: row.password_hash, sessionEpoch: row.session_epoch }
    : null;
}

export interface Membership {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly personal: boolean;
}

export interface DashboardUser {
  readonly id: string;
  readonly email: string;
  readonly personalOrgId: string;
  readonly memberships: readonly Membership[];
  /** Sessions of an earlier epoch are ended (src/accounts/user-sessions.ts). */
  readonly sessionEpoch: number;
  /** The account proved it receives mail at its address (or the operator made it). */
  readonly emailVerified: boolean;
  /** Its password was reset by e-mailed link then, and what it made not yet reviewed since. */
  readonly reviewAfterResetAt: Date | null;
}

/**
 * The dashboard API's user object (`GET /auth/session`'s `user`): what `gw admin create-user`
 * prints too, by the same names.
 */
export function dashboardUserView(user: DashboardUser): {
  id: string;
  email: string;
  personal_org_id: string;
  email_verified: boolean;
} {
  return {
    id: user.id,
    email: user.email,
    personal_org_id: user.personalOrgId,
    email_verified: user.emailVerified,
  };
}

/** The user and every organization they belong to (null when the user no longer exists). */
export async function loadDashboardUser(db: DbPool, userId: string): Promise<DashboardUser | null> {
  const { rows } = await db.query<{
    email: string;
    personal_org_id: string;
    session_epoch: number;
    email_verified: boolean;
    review_after_reset_at: Date | null;
    org_id: string | null;
    name: string | null;
    role: Role | null;
  }>(
    `SELECT u.email, u.personal_org_id, u.session_epoch,
            u.email_verified_at IS NOT NULL AS email_verified, u.review_after_reset_at,
            m.org_id, o.name, m.role
       FROM dashboard_users u
       LEFT JOIN org_memberships m ON m.user_id = u.id
       LEFT JOIN organizations o ON o.id = m.org_id
      WHERE u.id = $1
      ORDER BY o.created_at, m.org_id`,
    [userId],
  );
  const first = rows[0];
  if (!first) return null;
  return {
    id: userId,
    email: first.email,
    personalOrgId: first.personal_org_id,
    sessionEpoch: first.session_epoch,
    emailVerified: first.email_verified,
    reviewAfterResetAt: first.review_after_reset_at,
    memberships: rows
      .filter((row) => row.org_id !== null)
      .map((row) => ({
        id: row.org_id!,
        name: row.name!,
        role: row.role!,
        personal: row.org_id === first.personal_org_id,
      })),
  };
}

/**
 * Makes `userId` a member of `orgId` with `role`, audited as `actor`'s `member.add` (with
 * `details` beside the role), in the caller's transaction. False (nothing written) when they
 * already are one.
 */
export async function insertMembership(
  client: Pick<DbPool, 'query'>,
  actor: Actor,
  orgId: string,
  userId: string,
  role: Role,
  details: Readonly<Record<string, unknown>> = {},
): Promise<boolean> {
  const inserted = await client.query(
    `INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING`,
    [orgId, userId, role],
  );
  if (!inserted.rowCount) return false;
  await recordAudit(client, {
    orgId,
    userId: actor.userId,
    action: 'member.add',
    objectType: 'member',
    objectId: userId,
    details: { role, ...details },
  });
  return true;
}
