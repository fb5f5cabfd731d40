// Invitations to join an organization. A member who may add members (admin; owner for an
// owner invitation) invites an e-mail with a role; the answer is the same whether or not an
// account has that e-mail, so inviting tells nobody who has one. The user with the e-mail
// (now, or once sign-up or the operator makes their account) sees it once signed in and
// accepts or declines it; acceptance is checked against the organization as it is then.
// Making one answers an accept token once (only its SHA-256 is kept) for the inviter to pass
// on: where anyone may sign up, nobody proves they own an e-mail, so acceptance needs it
// (decision 365).
// Invitations expire; they are bounded per organization (open ones, and ones made a day).
// Every change is audited in the same transaction.
import { recordAudit, type Actor } from '../audit/audit.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import { newId, newSecret, secretPrefixes, sha256Hex } from '../ids.js';
import { lockMemberships, type MembershipActor } from './members.js';
import {
  insertMembership,
  isAccountEmail,
  normalizeEmail,
  roleAtLeast,
  type Role,
} from './users.js';

/** How long an invitation may be accepted. */
export const INVITATION_TTL_DAYS = 7;
/** Open (pending, unexpired) invitations an organization may have at once. */
export const MAX_OPEN_INVITATIONS_PER_ORG = 100;
/** Invitations an organization may make in any 24 hours, revoked ones included. */
export const MAX_INVITATIONS_PER_ORG_PER_DAY = 200;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The role that may invite (and revoke invitations): the one that manages members. */
const INVITING_ROLE: Role = 'admin';

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked' | 'expired';

export interface InvitationRow {
  readonly id: string;
  readonly org_id: string;
  readonly org_name: string;
  readonly email: string;
  readonly role: Role;
  readonly status: InvitationStatus;
  readonly invited_by: string;
  readonly invited_by_email: string | null;
  readonly created_at: Date;
  readonly expires_at: Date;
  /** SHA-256 (hex) of its accept token; null for one made before it had one (migration 057). */
  readonly accept_token_hash: string | null;
  readonly cursor_us: string;
}

/** The invitation as the API shows it; a pending one past its expiry reads as expired. */
export function invitationView(row: InvitationRow, now = Date.now()): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.org_id,
    org_name: row.org_name,
    email: row.email,
    role: row.role,
    status: row.status === 'pending' && isExpired(row, now) ? 'expired' : row.status,
    invited_by: row.invited_by,
    invited_by_email: row.invited_by_email,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
  };
}

const isExpired = (row: Pick<InvitationRow, 'expires_at'>, now: number): boolean =>
  row.expires_at.getTime() <= now;

/** An invitation rule was broken; `kind` picks the answer (`throttled` carries a wait). */
export class InvitationError extends Error {
  override readonly name = 'InvitationError';
  constructor(
    readonly kind: 'invalid' | 'not_found' | 'conflict' | 'forbidden' | 'throttled',
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message);
  }
}

const SELECT_INVITATIONS = `SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.status,
       i.invited_by, inviter.email AS invited_by_email, i.created_at, i.expires_at,
       i.accept_token_hash,
       (extract(epoch FROM i.created_at) * 1000000)::bigint::text AS cursor_us
  FROM org_invitations i
  JOIN organizations o ON o.id = i.org_id
  LEFT JOIN dashboard_users inviter ON inviter.id = i.invited_by`;

const OPEN = "i.status = 'pending' AND i.expires_at > now()";

/** The organization's open invitations (pending, not expired), oldest first. */
export function listOrgInvitations(
  db: DbPool,
  orgId: string,
  page: PageRequest,
): Promise<Page<InvitationRow>> {
  return readPage(
    db,
    {
      select: SELECT_INVITATIONS,
      where: `i.org_id = $1 AND ${OPEN}`,
      params: [orgId],
      createdAtColumn: 'i.created_at',
      idColumn: 'i.id',
    },
    page,
  );
}

/** The open invitations addressed to a user's e-mail, oldest first. */
export function listInvitationsFor(
  db: DbPool,
  email: string,
  page: PageRequest,
): Promise<Page<InvitationRow>> {
  return readPage(
    db,
    {
      select: SELECT_INVITATIONS,
      where: `i.email = $1 AND ${OPEN}`,
      params: [normalizeEmail(email)],
      createdAtColumn: 'i.created_at',
      idColumn: 'i.id',
    },
    page,
  );
}

/** A new invitation and its accept token, the one time it is known. */
export interface CreatedInvitation {
  readonly invitation: InvitationRow;
  readonly acceptToken: string;
}

export async function createInvitation(
  db: DbPool,
  actor: MembershipActor,
  orgId: string,
  rawEmail: string,
  role: Role,
): Promise<CreatedInvitation> {
  const email = normalizeEmail(rawEmail);
  if (!isAccountEmail(email)) {
    throw new InvitationError(
      'invalid',
      'email: must be an e-mail address of at most 254 characters',
    );
  }
  return withTransaction(db, async (client) => {
    const roles = await lockMemberships(client, orgId);
    mayInvite(roles.get(actor.userId), role, 'inviting');
    const member = await client.query(
      `SELECT 1 FROM org_memberships m JOIN dashboard_users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2`,
      [orgId, email],
    );
    if (member.rowCount) {
      throw new InvitationError('conflict', 'a member of the organization has this e-mail');
    }
    // Expired invitations close here, so the e-mail can be invited again and the count of
    // open ones is exact.
    await client.query(
      `UPDATE org_invitations SET status = 'expired', responded_at = now()
        WHERE org_id = $1 AND status = 'pending' AND expires_at <= now()`,
      [orgId],
    );
    const { rows } = await client.query<{
      open: number;
      for_email: number;
      made: number;
      oldest: Date | null;
    }>(
      `SELECT count(*) FILTER (WHERE status = 'pending')::int AS open,
              count(*) FILTER (WHERE status = 'pending' AND email = $2)::int AS for_email,
              count(*) FILTER (WHERE created_at > now() - interval '1 day')::int AS made,
              min(created_at) FILTER (WHERE created_at > now() - interval '1 day') AS oldest
         FROM org_invitations WHERE org_id = $1`,
      [orgId, email],
    );
    const counts = rows[0]!;
    if (counts.for_email > 0) {
      throw new InvitationError(
        'conflict',
        'an invitation to this e-mail is pending: revoke it to invite again',
      );
    }
    if (counts.open >= MAX_OPEN_INVITATIONS_PER_ORG) {
      throw new InvitationError(
        'conflict',
        `the organization has ${MAX_OPEN_INVITATIONS_PER_ORG} pending invitations: revoke some, or wait for them to be answered or to expire`,
      );
    }
    if (counts.made >= MAX_INVITATIONS_PER_ORG_PER_DAY && counts.oldest) {
      const waitMs = Math.max(1000, counts.oldest.getTime() + DAY_MS - Date.now());
      throw new InvitationError(
        'throttled',
        `the organization made ${MAX_INVITATIONS_PER_ORG_PER_DAY} invitations in the last 24 hours`,
        waitMs,
      );
    }
    const id = newId('inv');
    const acceptToken = newSecret(secretPrefixes.invitationToken);
    await client.query(
      `INSERT INTO org_invitations (id, org_id, email, role, invited_by, expires_at, accept_token_hash)
       VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 day', $7)`,
      [id, orgId, email, role, actor.userId, INVITATION_TTL_DAYS, sha256Hex(acceptToken)],
    );
    const invitation = await invitationOf(client, id);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'invitation.create',
      objectType: 'invitation',
      objectId: id,
      details: { email, role, expires_at: invitation.expires_at.toISOString() },
    });
    return { invitation, acceptToken };
  });
}

/**
 * Revokes an open invitation. The actor's role is read under the organization's membership
 * lock, as the one they hold now; an owner invitation is revoked by an owner only.
 */
export async function revokeInvitation(
  db: DbPool,
  actor: Actor,
  invitationId: string,
): Promise<InvitationRow> {
  return withTransaction(db, async (client) => {
    const locked = await lockedInvitation(client, invitationId);
    const actorRole = locked?.roles.get(actor.userId);
    if (!locked || !actorRole) {
      throw new InvitationError('not_found', 'no invitation with this id in your organizations');
    }
    mayInvite(actorRole, locked.invitation.role, 'revoking');
    refuseUnlessOpen(locked.invitation);
    return close(client, locked.invitation, 'revoked', actor.userId, {
      email: locked.invitation.email,
    });
  });
}

/** Who answers an invitation: the signed-in user, by their account's e-mail. */
export interface Invitee {
  readonly id: string;
  readonly email: string;
}

/** The accept token presented, and whether one is needed (self-service sign-up is on). */
export interface AcceptProof {
  readonly token: string | undefined;
  readonly tokenRequired: boolean;
}

/**
 * Accepts an invitation addressed to the user's e-mail: they become a member with its role,
 * if whoever sent it may still add that role (else 409, and it stays open for an admin to
 * revoke). A user who is a member already keeps the role they have. Accepting an invitation
 * the user accepted already changes nothing and answers the same. Its accept token is checked
 * first (see checkAcceptToken).
 */
export async function acceptInvitation(
  db: DbPool,
  user: Invitee,
  invitationId: string,
  proof: AcceptProof,
): Promise<InvitationRow> {
  return withTransaction(db, async (client) => {
    const { invitation, roles } = await inviteeInvitation(client, user, invitationId);
    checkAcceptToken(invitation, proof);
    if (invitation.status === 'accepted') return invitation;
    refuseUnlessOpen(invitation);
    const inviterRole = roles.get(invitation.invited_by);
    if (!inviterRole || !canInvite(inviterRole, invitation.role)) {
      throw new InvitationError(
        'conflict',
        'whoever sent this invitation can no longer add this role to the organization: ask for a new one',
      );
    }
    const joined = await insertMembership(
      client,
      { userId: user.id },
      invitation.org_id,
      user.id,
      invitation.role,
      { invitation_id: invitation.id },
    );
    return close(client, invitation, 'accepted', user.id, {
      email: invitation.email,
      ...(!joined && { already_member: true }),
    });
  });
}

/** Declines an invitation addressed to the user's e-mail; declining twice changes nothing. */
export async function declineInvitation(
  db: DbPool,
  user: Invitee,
  invitationId: string,
): Promise<InvitationRow> {
  return withTransaction(db, async (client) => {
    const { invitation } = await inviteeInvitation(client, user, invitationId);
    if (invitation.status === 'declined') return invitation;
    refuseUnlessOpen(invitation);
    return close(client, invitation, 'declined', user.id, { email: invitation.email });
  });
}

/**
 * A token presented must be the invitation's; where one is required (sign-up on) it must be
 * presented, and an invitation made before tokens (none stored) cannot be accepted. A missing
 * or wrong token answers as an invitation to another e-mail does (404): it tells nothing more.
 */
function checkAcceptToken(invitation: InvitationRow, proof: AcceptProof): void {
  const stored = invitation.accept_token_hash;
  if (stored === null && proof.tokenRequired) {
    throw new InvitationError(
      'conflict',
      'this invitation was made before invitations had an accept token, and anyone may sign up on this gateway: ask for a new one',
    );
  }
  if (proof.token === undefined ? !proof.tokenRequired : sha256Hex(proof.token) === stored) {
    return;
  }
  throw new InvitationError(
    'not_found',
    'no invitation with this id and accept token for you: accept it with the link its sender gave you',
  );
}

/** Whether `role` may invite (or revoke an invitation) to `invitedRole`. */
export function canInvite(role: Role, invitedRole: Role): boolean {
  return roleAtLeast(role, INVITING_ROLE) && (invitedRole !== 'owner' || role === 'owner');
}

function mayInvite(actorRole: Role | undefined, invitedRole: Role, doing: string): void {
  if (!actorRole) {
    throw new InvitationError('not_found', 'no organization with this id in your organizations');
  }
  if (!roleAtLeast(actorRole, INVITING_ROLE)) {
    throw new InvitationError('forbidden', `${doing} members needs the admin role or higher`);
  }
  if (!canInvite(actorRole, invitedRole)) {
    throw new InvitationError('forbidden', `${doing} an owner needs the owner role`);
  }
}

function refuseUnlessOpen(invitation: InvitationRow): void {
  if (invitation.status !== 'pending') {
    throw new InvitationError('conflict', `this invitation was ${invitation.status}`);
  }
  if (isExpired(invitation, Date.now())) {
    throw new InvitationError('conflict', 'this invitation expired: ask for a new one');
  }
}

interface LockedInvitation {
  readonly invitation: InvitationRow;
  /** The roles of its organization's members, locked (see lockMemberships). */
  readonly roles: ReadonlyMap<string, Role>;
}

/**
 * The invitation with its row locked, and its organization's memberships, or null. The
 * memberships are locked first, as making an invitation does, so the two never wait on each
 * other in opposite orders.
 */
async function lockedInvitation(client: DbClient, id: string): Promise<LockedInvitation | null> {
  const owner = await client.query<{ org_id: string }>(
    'SELECT org_id FROM org_invitations WHERE id = $1',
    [id],
  );
  const orgId = owner.rows[0]?.org_id;
  if (orgId === undefined) return null;
  const roles = await lockMemberships(client, orgId);
  const { rows } = await client.query<InvitationRow>(
    `${SELECT_INVITATIONS} WHERE i.id = $1 FOR UPDATE OF i`,
    [id],
  );
  return rows[0] ? { invitation: rows[0], roles } : null;
}

/**
 * The invitation, locked, when it is addressed to the user's e-mail. Another e-mail's answers
 * 404 as one that does not exist: an invitation's id says nothing to anyone else.
 */
async function inviteeInvitation(
  client: DbClient,
  user: Invitee,
  id: string,
): Promise<LockedInvitation> {
  const locked = await lockedInvitation(client, id);
  if (!locked || locked.invitation.email !== normalizeEmail(user.email)) {
    throw new InvitationError('not_found', 'no invitation with this id for you');
  }
  return locked;
}

const CLOSING_ACTIONS = {
  accepted: 'invitation.accept',
  declined: 'invitation.decline',
  revoked: 'invitation.revoke',
} as const;

/** Closes an open invitation as `userId`'s answer (or revocation), audited. */
async function close(
  client: DbClient,
  invitation: InvitationRow,
  status: keyof typeof CLOSING_ACTIONS,
  userId: string,
  details: Readonly<Record<string, unknown>>,
): Promise<InvitationRow> {
  await client.query(
    `UPDATE org_invitations SET status = $2, responded_at = now(), responded_by = $3
      WHERE id = $1`,
    [invitation.id, status, userId],
  );
  await recordAudit(client, {
    orgId: invitation.org_id,
    userId,
    action: CLOSING_ACTIONS[status],
    objectType: 'invitation',
    objectId: invitation.id,
    details: { ...details, role: invitation.role },
  });
  return invitationOf(client, invitation.id);
}

async function invitationOf(client: DbClient, id: string): Promise<InvitationRow> {
  const { rows } = await client.query<InvitationRow>(`${SELECT_INVITATIONS} WHERE i.id = $1`, [id]);
  return rows[0]!;
}
