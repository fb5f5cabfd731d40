// Joining an organization by invitation (decision 359): an admin invites an e-mail, the answer
// tells nothing about whether it has an account, and only the user with that e-mail, once
// signed in, accepts or declines it. Driven as a browser would, against the real services,
// across two tenants.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  DashboardClient,
  signInTo,
  TEST_PASSWORD,
  uniqueEmail,
} from './support/dashboard.js';
import { runCliJson, seed, startGateway, type GatewayProcess } from './support/processes.js';
import type { ErrorBody } from './support/http.js';

const { env, db } = isolatedContext('dash-invites');
let gateway: GatewayProcess;

interface Invitation {
  id: string;
  org_id: string;
  org_name: string;
  email: string;
  role: string;
  status: string;
  invited_by: string;
  invited_by_email: string | null;
  created_at: string;
  expires_at: string;
}
/** The answer to making one: the invitation, with its accept token and link (once). */
interface Sent extends Invitation {
  accept_token: string;
  accept_url: string;
}
interface Page<Row> {
  data: Row[];
  next_cursor: string | null;
}

/** An organization with an owner, an admin and a viewer, each signed in. */
interface Tenant {
  orgId: string;
  emails: { owner: string; admin: string; viewer: string };
  owner: DashboardClient;
  admin: DashboardClient;
  viewer: DashboardClient;
}

async function tenant(): Promise<Tenant> {
  const { org_id: orgId } = await seed(env);
  const emails = {
    owner: uniqueEmail('owner'),
    admin: uniqueEmail('admin'),
    viewer: uniqueEmail('viewer'),
  };
  // Made and signed in at once, as the tests' tenants and users are: none depends on another,
  // and each costs two scrypt runs (made, signed in): the most of what these tests take.
  const member = async (role: keyof Tenant['emails']): Promise<DashboardClient> => {
    await createMember(env, emails[role], orgId, role);
    return signInTo(gateway, emails[role]);
  };
  const [owner, admin, viewer] = await Promise.all([
    member('owner'),
    member('admin'),
    member('viewer'),
  ]);
  return { orgId, emails, owner, admin, viewer };
}

/** A user with an account (and their personal organization), signed in. */
async function user(
  label: string,
): Promise<{ email: string; id: string; personalOrgId: string; client: DashboardClient }> {
  const email = uniqueEmail(label);
  const created = await runCliJson<{ id: string; personal_org_id: string }>(
    ['admin', 'create-user', '--email', email, '--password-stdin'],
    env,
    { stdin: TEST_PASSWORD },
  );
  return {
    email,
    id: created.id,
    personalOrgId: created.personal_org_id,
    client: await signInTo(gateway, email),
  };
}

const invite = (client: DashboardClient, orgId: string, email: string, role = 'member') =>
  client.post<Sent & ErrorBody>(`/dashboard/api/orgs/${orgId}/invitations`, { email, role });
/** Accepts, with the accept token when one is given (the gateway here has sign-up on). */
const accept = (client: DashboardClient, id: string, token?: string) =>
  client.post<Invitation & ErrorBody>(
    `/dashboard/api/user/invitations/${id}/accept`,
    token === undefined ? undefined : { token },
  );
/** The invitation as the lists show it: no token. */
const listed = ({ accept_token: _token, accept_url: _url, ...invitation }: Sent): Invitation =>
  invitation;
const decline = (client: DashboardClient, id: string) =>
  client.post<Invitation & ErrorBody>(`/dashboard/api/user/invitations/${id}/decline`);
const revoke = (client: DashboardClient, id: string) =>
  client.post<Invitation & ErrorBody>(`/dashboard/api/invitations/${id}/revoke`);
const mine = async (client: DashboardClient): Promise<Invitation[]> =>
  (await client.get<Page<Invitation>>('/dashboard/api/user/invitations')).body.data;

const membershipOf = async (orgId: string, userId: string): Promise<string | null> =>
  (
    await db.query<{ role: string }>(
      'SELECT role FROM org_memberships WHERE org_id = $1 AND user_id = $2',
      [orgId, userId],
    )
  ).rows[0]?.role ?? null;

const statusOf = async (id: string): Promise<string | undefined> =>
  (await db.query<{ status: string }>('SELECT status FROM org_invitations WHERE id = $1', [id]))
    .rows[0]?.status;

const auditOf = async (orgId: string, objectId: string) =>
  (
    await db.query<{ user_id: string; action: string; details: Record<string, unknown> }>(
      `SELECT user_id, action, details FROM dashboard_audit_log
        WHERE org_id = $1 AND object_id = $2 ORDER BY id`,
      [orgId, objectId],
    )
  ).rows;

beforeAll(async () => {
  gateway = await startGateway({ ...env, DASHBOARD_SIGNUP: 'true' });
});

afterAll(async () => {
  await gateway?.stop();
});

describe('inviting', () => {
  it('answers the same 201 whether or not an account has the e-mail, and makes nobody a member', async () => {
    const a = await tenant();
    const invitee = await user('invitee');
    const known = await invite(a.admin, a.orgId, `  ${invitee.email.toUpperCase()} `, 'member');
    const unknownEmail = uniqueEmail('nobody');
    const unknown = await invite(a.admin, a.orgId, unknownEmail, 'member');
    expect(known.status).toBe(201);
    expect(unknown.status).toBe(201);
    expect(Object.keys(known.body).sort()).toEqual(Object.keys(unknown.body).sort());
    /** What may differ between two invitations: their ids, e-mails and times. */
    const comparable = (invitation: Sent) => ({
      ...invitation,
      id: undefined,
      email: undefined,
      created_at: undefined,
      expires_at: undefined,
      accept_token: undefined,
      accept_url: undefined,
    });
    expect(comparable(known.body)).toEqual(comparable(unknown.body));
    expect(known.body).toMatchObject({
      email: invitee.email,
      role: 'member',
      status: 'pending',
      org_id: a.orgId,
      invited_by_email: a.emails.admin,
    });
    expect(unknown.body.email).toBe(unknownEmail);
    // the accept token, once, in a dashboard link; only its SHA-256 is kept
    expect(known.body.accept_token).toMatch(/^gw_inv_[0-9A-Za-z]{43}$/);
    expect(known.body.accept_url).toBe(
      `https://127.0.0.1:${gateway.port}/dashboard/#invitation_token=${known.body.accept_token}`,
    );
    expect(known.headers.get('cache-control')).toBe('no-store');
    const stored = await db.query<{ accept_token_hash: string }>(
      'SELECT accept_token_hash FROM org_invitations WHERE id = $1',
      [known.body.id],
    );
    expect(stored.rows[0]!.accept_token_hash).toBe(
      createHash('sha256').update(known.body.accept_token).digest('hex'),
    );
    // seven days to answer
    expect(Date.parse(known.body.expires_at) - Date.parse(known.body.created_at)).toBe(
      7 * 24 * 3600 * 1000,
    );
    expect(await membershipOf(a.orgId, invitee.id)).toBeNull();
    expect(
      (await invitee.client.get<ErrorBody>(`/dashboard/api/orgs/${a.orgId}/apps`)).status,
    ).toBe(404);
    const orgList = await a.admin.get<Page<Invitation>>(
      `/dashboard/api/orgs/${a.orgId}/invitations`,
    );
    expect(orgList.status).toBe(200);
    expect(orgList.body.data).toEqual([listed(known.body), listed(unknown.body)]);
    expect(await auditOf(a.orgId, known.body.id)).toEqual([
      {
        user_id: expect.stringMatching(/^usr_/),
        action: 'invitation.create',
        details: { email: invitee.email, role: 'member', expires_at: known.body.expires_at },
      },
    ]);
  });

  it('takes the roles that may add members: a viewer neither invites nor lists, an admin invites no owner', async () => {
    const a = await tenant();
    const email = uniqueEmail('someone');
    const byViewer = await invite(a.viewer, a.orgId, email, 'viewer');
    expect(byViewer.status).toBe(403);
    expect(byViewer.body.error.code).toBe('gw_role_forbidden');
    expect(
      (await a.viewer.get<ErrorBody>(`/dashboard/api/orgs/${a.orgId}/invitations`)).status,
    ).toBe(403);
    const ownerByAdmin = await invite(a.admin, a.orgId, email, 'owner');
    expect(ownerByAdmin.status).toBe(403);
    expect(ownerByAdmin.body.error.code).toBe('gw_role_forbidden');
    const ownerByOwner = await invite(a.owner, a.orgId, email, 'owner');
    expect(ownerByOwner.status).toBe(201);
    // an owner invitation is revoked by an owner only
    const revokedByAdmin = await revoke(a.admin, ownerByOwner.body.id);
    expect(revokedByAdmin.status).toBe(403);
    expect(await statusOf(ownerByOwner.body.id)).toBe('pending');
    const { rows } = await db.query('SELECT 1 FROM org_invitations WHERE org_id = $1', [a.orgId]);
    expect(rows).toHaveLength(1);
  });

  it('refuses an e-mail already invited or already a member (409), and one that is not an e-mail (400)', async () => {
    const a = await tenant();
    const email = uniqueEmail('twice');
    expect((await invite(a.admin, a.orgId, email)).status).toBe(201);
    const again = await invite(a.admin, a.orgId, email.toUpperCase(), 'viewer');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('gw_conflict');
    const member = await invite(a.admin, a.orgId, a.emails.viewer);
    expect(member.status).toBe(409);
    expect(member.body.error.message).toBe('a member of the organization has this e-mail');
    const bad = await invite(a.admin, a.orgId, 'not an e-mail');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'email: must be an e-mail address of at most 254 characters',
    });
    const { rows } = await db.query('SELECT email FROM org_invitations WHERE org_id = $1', [
      a.orgId,
    ]);
    expect(rows).toEqual([{ email }]);
  });

  it('holds at most 100 open invitations per organization (409) and makes at most 200 a day (429)', async () => {
    const a = await tenant();
    const inviterId = (await a.admin.get<{ user: { id: string } }>('/auth/session')).body.user.id;
    await db.query(
      `INSERT INTO org_invitations (id, org_id, email, role, invited_by, expires_at)
       SELECT 'inv_bound' || n || $1, $1, 'bound-' || n || '@example.com', 'viewer', $2,
              now() + interval '1 day'
         FROM generate_series(1, 99) AS n`,
      [a.orgId, inviterId],
    );
    expect((await invite(a.admin, a.orgId, uniqueEmail('hundredth'))).status).toBe(201);
    const full = await invite(a.admin, a.orgId, uniqueEmail('one-too-many'));
    expect(full.status).toBe(409);
    expect(full.body.error.message).toMatch(/has 100 pending invitations/);
    // revoked ones free a place, but count against the day's 200
    await db.query(
      `UPDATE org_invitations SET status = 'revoked' WHERE org_id = $1 AND id LIKE 'inv_bound%'`,
      [a.orgId],
    );
    await db.query(
      `INSERT INTO org_invitations (id, org_id, email, role, invited_by, status, expires_at)
       SELECT 'inv_day' || n || $1, $1, 'day-' || n || '@example.com', 'viewer', $2, 'revoked',
              now() + interval '1 day'
         FROM generate_series(1, 99) AS n`,
      [a.orgId, inviterId],
    );
    expect((await invite(a.admin, a.orgId, uniqueEmail('two-hundredth'))).status).toBe(201);
    const throttled = await invite(a.admin, a.orgId, uniqueEmail('throttled'));
    expect(throttled.status).toBe(429);
    expect(throttled.body.error.code).toBe('gw_too_many_attempts');
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM org_invitations WHERE org_id = $1',
      [a.orgId],
    );
    expect(rows[0]!.n).toBe(200);
  });
});

describe('answering an invitation', () => {
  it('the invited user sees it and accepts: a member with its role; accepting again changes nothing', async () => {
    const [a, invitee] = await Promise.all([tenant(), user('accepts')]);
    const sent = await invite(a.admin, a.orgId, invitee.email, 'admin');
    const pending = await mine(invitee.client);
    expect(pending).toEqual([listed(sent.body)]);
    const accepted = await accept(invitee.client, sent.body.id, sent.body.accept_token);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ id: sent.body.id, status: 'accepted', role: 'admin' });
    expect(await membershipOf(a.orgId, invitee.id)).toBe('admin');
    const session = await invitee.client.get<{ orgs: { id: string; role: string }[] }>(
      '/auth/session',
    );
    expect(session.body.orgs).toContainEqual(
      expect.objectContaining({ id: a.orgId, role: 'admin' }),
    );
    expect((await invitee.client.get(`/dashboard/api/orgs/${a.orgId}/apps`)).status).toBe(200);
    expect(await mine(invitee.client)).toEqual([]);
    expect(
      (await a.admin.get<Page<Invitation>>(`/dashboard/api/orgs/${a.orgId}/invitations`)).body.data,
    ).toEqual([]);

    const twice = await accept(invitee.client, sent.body.id, sent.body.accept_token);
    expect(twice.status).toBe(200);
    expect(twice.body).toEqual(accepted.body);
    const declinedAfter = await decline(invitee.client, sent.body.id);
    expect(declinedAfter.status).toBe(409);
    expect(await membershipOf(a.orgId, invitee.id)).toBe('admin');
    expect(await auditOf(a.orgId, sent.body.id)).toEqual([
      expect.objectContaining({ action: 'invitation.create' }),
      {
        user_id: invitee.id,
        action: 'invitation.accept',
        details: { email: invitee.email, role: 'admin' },
      },
    ]);
    expect(await auditOf(a.orgId, invitee.id)).toEqual([
      {
        user_id: invitee.id,
        action: 'member.add',
        details: { role: 'admin', invitation_id: sent.body.id },
      },
    ]);
  });

  it('a user who signs up later with the e-mail finds it, and may decline it (twice, harmlessly)', async () => {
    const a = await tenant();
    const email = uniqueEmail('later');
    const sent = await invite(a.admin, a.orgId, email, 'viewer');
    const signUp = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
    const made = await signUp.post<{ user: { id: string } }>(
      '/auth/signup',
      { email: email.toUpperCase(), password: TEST_PASSWORD },
      { csrf: false },
    );
    expect(made.status).toBe(201);
    const later = await signInTo(gateway, email);
    expect((await mine(later)).map((row) => row.id)).toEqual([sent.body.id]);
    const declined = await decline(later, sent.body.id);
    expect(declined.status).toBe(200);
    expect(declined.body.status).toBe('declined');
    expect((await decline(later, sent.body.id)).status).toBe(200);
    const acceptedAfter = await accept(later, sent.body.id, sent.body.accept_token);
    expect(acceptedAfter.status).toBe(409);
    expect(acceptedAfter.body.error.message).toBe('this invitation was declined');
    expect(await membershipOf(a.orgId, made.body.user.id)).toBeNull();
    expect((await auditOf(a.orgId, sent.body.id)).map((entry) => entry.action)).toEqual([
      'invitation.create',
      'invitation.decline',
    ]);
    // the organization may invite the e-mail again once it was answered
    expect((await invite(a.admin, a.orgId, email)).status).toBe(201);
  });

  it('a revoked or expired invitation cannot be accepted', async () => {
    const [a, invitee] = await Promise.all([tenant(), user('late')]);
    const revoked = await invite(a.admin, a.orgId, invitee.email);
    const withdrawn = await revoke(a.admin, revoked.body.id);
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body.status).toBe('revoked');
    expect((await revoke(a.admin, revoked.body.id)).status).toBe(409);
    const afterRevoke = await accept(invitee.client, revoked.body.id, revoked.body.accept_token);
    expect(afterRevoke.status).toBe(409);
    expect(afterRevoke.body.error.message).toBe('this invitation was revoked');

    const expiring = await invite(a.admin, a.orgId, invitee.email);
    await db.query(
      `UPDATE org_invitations SET created_at = now() - interval '8 days',
              expires_at = now() - interval '1 day' WHERE id = $1`,
      [expiring.body.id],
    );
    expect(await mine(invitee.client)).toEqual([]);
    const afterExpiry = await accept(invitee.client, expiring.body.id, expiring.body.accept_token);
    expect(afterExpiry.status).toBe(409);
    expect(afterExpiry.body.error.message).toBe('this invitation expired: ask for a new one');
    expect((await decline(invitee.client, expiring.body.id)).status).toBe(409);
    expect(await membershipOf(a.orgId, invitee.id)).toBeNull();
    // an expired invitation makes way for a new one
    const renewed = await invite(a.admin, a.orgId, invitee.email);
    expect(renewed.status).toBe(201);
    expect(await statusOf(expiring.body.id)).toBe('expired');
    expect((await auditOf(a.orgId, revoked.body.id)).map((entry) => entry.action)).toEqual([
      'invitation.create',
      'invitation.revoke',
    ]);
  });

  it('is checked against the organization when accepted: an inviter who lost the role to invite it invites nobody', async () => {
    const [a, invitee] = await Promise.all([tenant(), user('checked')]);
    const sent = await invite(a.admin, a.orgId, invitee.email, 'member');
    const adminId = sent.body.invited_by;
    const demoted = await a.owner.request(
      'PATCH',
      `/dashboard/api/orgs/${a.orgId}/members/${adminId}`,
      { role: 'viewer' },
    );
    expect(demoted.status).toBe(200);
    const refused = await accept(invitee.client, sent.body.id, sent.body.accept_token);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/can no longer add this role/);
    expect(await membershipOf(a.orgId, invitee.id)).toBeNull();
    expect(await statusOf(sent.body.id)).toBe('pending');
  });

  it('a user already a member keeps their role when accepting', async () => {
    const [a, invitee] = await Promise.all([tenant(), user('already')]);
    const sent = await invite(a.owner, a.orgId, invitee.email, 'owner');
    await runCliJson(
      ['admin', 'add-member', '--email', invitee.email, '--org-id', a.orgId, '--role', 'viewer'],
      env,
    );
    const accepted = await accept(invitee.client, sent.body.id, sent.body.accept_token);
    expect(accepted.status).toBe(200);
    expect(await membershipOf(a.orgId, invitee.id)).toBe('viewer');
    expect((await auditOf(a.orgId, sent.body.id)).at(-1)).toMatchObject({
      action: 'invitation.accept',
      details: { already_member: true },
    });
  });
});

describe('the accept token, where anyone may sign up (decision 365)', () => {
  it('whoever signs up first with the invited e-mail cannot accept without the token; the invitee with it can', async () => {
    const a = await tenant();
    const email = uniqueEmail('squatted');
    const sent = await invite(a.admin, a.orgId, email, 'admin');
    // someone else signs up with the address (nobody proves they own it) and finds the invitation
    const signUp = new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);
    const made = await signUp.post<{ user: { id: string } }>(
      '/auth/signup',
      { email, password: TEST_PASSWORD },
      { csrf: false },
    );
    expect(made.status).toBe(201);
    const squatter = await signInTo(gateway, email);
    expect((await mine(squatter)).map((row) => row.id)).toEqual([sent.body.id]);

    const without = await accept(squatter, sent.body.id);
    expect(without.status).toBe(404);
    expect(without.body.error).toEqual({
      code: 'gw_not_found',
      message:
        'no invitation with this id and accept token for you: accept it with the link its sender gave you',
    });
    const guessed = await accept(squatter, sent.body.id, `gw_inv_${'A'.repeat(43)}`);
    expect(guessed.status).toBe(404);
    expect(guessed.body).toEqual(without.body);
    const empty = await accept(squatter, sent.body.id, '');
    expect(empty.body).toEqual(without.body);
    const notJson = await squatter.post<ErrorBody>(
      `/dashboard/api/user/invitations/${sent.body.id}/accept`,
      { token: 42 },
    );
    expect(notJson.status).toBe(400);
    // nothing changed: still pending, nobody joined, only the creation audited
    expect(await statusOf(sent.body.id)).toBe('pending');
    expect(await membershipOf(a.orgId, made.body.user.id)).toBeNull();
    expect((await auditOf(a.orgId, sent.body.id)).map((entry) => entry.action)).toEqual([
      'invitation.create',
    ]);

    // the link's holder (here the same account: e-mails are unique) accepts with it
    const withToken = await accept(squatter, sent.body.id, sent.body.accept_token);
    expect(withToken.status).toBe(200);
    expect(withToken.body.status).toBe('accepted');
    expect(await membershipOf(a.orgId, made.body.user.id)).toBe('admin');
  });

  it('declining needs no token; an invitation made before tokens cannot be accepted', async () => {
    const [a, invitee] = await Promise.all([tenant(), user('no-token')]);
    const declined = await invite(a.admin, a.orgId, invitee.email);
    expect((await decline(invitee.client, declined.body.id)).status).toBe(200);

    const old = await invite(a.owner, a.orgId, invitee.email, 'viewer');
    await db.query('UPDATE org_invitations SET accept_token_hash = NULL WHERE id = $1', [
      old.body.id,
    ]);
    for (const token of [undefined, old.body.accept_token]) {
      const refused = await accept(invitee.client, old.body.id, token);
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toBe(
        'this invitation was made before invitations had an accept token, and anyone may sign up on this gateway: ask for a new one',
      );
    }
    expect(await statusOf(old.body.id)).toBe('pending');
    expect(await membershipOf(a.orgId, invitee.id)).toBeNull();
  });
});

describe('the accept token, where only the operator makes accounts', () => {
  let closed: GatewayProcess;
  beforeAll(async () => {
    closed = await startGateway({ ...env, DASHBOARD_SIGNUP: 'false' });
  });
  afterAll(async () => {
    await closed?.stop();
  });

  it('is not needed (the account is trusted), but a wrong one is refused', async () => {
    const { org_id: orgId } = await seed(env);
    const adminEmail = uniqueEmail('closed-admin');
    await createMember(env, adminEmail, orgId, 'admin');
    const admin = await signInTo(closed, adminEmail);
    const email = uniqueEmail('closed-invitee');
    const created = await runCliJson<{ id: string }>(
      ['admin', 'create-user', '--email', email, '--password', TEST_PASSWORD],
      env,
    );
    const invitee = await signInTo(closed, email);

    const sent = await invite(admin, orgId, email, 'member');
    expect(sent.status).toBe(201);
    expect(sent.body.accept_token).toMatch(/^gw_inv_/);
    const wrong = await accept(invitee, sent.body.id, `gw_inv_${'B'.repeat(43)}`);
    expect(wrong.status).toBe(404);
    expect(await statusOf(sent.body.id)).toBe('pending');
    const accepted = await accept(invitee, sent.body.id);
    expect(accepted.status).toBe(200);
    expect(await membershipOf(orgId, created.id)).toBe('member');

    // one made before tokens: accepted without one, refused with one (it cannot match)
    const second = uniqueEmail('closed-second');
    const secondUser = await runCliJson<{ id: string }>(
      ['admin', 'create-user', '--email', second, '--password', TEST_PASSWORD],
      env,
    );
    const legacy = await invite(admin, orgId, second, 'viewer');
    await db.query('UPDATE org_invitations SET accept_token_hash = NULL WHERE id = $1', [
      legacy.body.id,
    ]);
    const secondClient = await signInTo(closed, second);
    expect((await accept(secondClient, legacy.body.id, legacy.body.accept_token)).status).toBe(404);
    expect((await accept(secondClient, legacy.body.id)).status).toBe(200);
    expect(await membershipOf(orgId, secondUser.id)).toBe('viewer');
  });
});

describe('between tenants and users', () => {
  it('another organization’s admin can neither list nor revoke an invitation; another user can neither see, accept nor decline it', async () => {
    const [a, b, invitee, stranger] = await Promise.all([
      tenant(),
      tenant(),
      user('addressed'),
      user('stranger'),
    ]);
    const sent = await invite(a.admin, a.orgId, invitee.email, 'viewer');

    const list = await b.admin.get<ErrorBody>(`/dashboard/api/orgs/${a.orgId}/invitations`);
    expect(list.status).toBe(404);
    const revokedByB = await revoke(b.owner, sent.body.id);
    expect(revokedByB.status).toBe(404);
    expect(revokedByB.body.error.code).toBe('gw_not_found');
    const missing = await revoke(b.owner, 'inv_doesnotexist00000000');
    expect(missing.body).toEqual(revokedByB.body);
    const ownList = await b.admin.get<Page<Invitation>>(
      `/dashboard/api/orgs/${b.orgId}/invitations`,
    );
    expect(ownList.body.data).toEqual([]);
    const inviteIntoA = await invite(b.admin, a.orgId, stranger.email);
    expect(inviteIntoA.status).toBe(404);

    expect(await mine(stranger.client)).toEqual([]);
    // the token does not make the invitation anyone else's
    const acceptByStranger = await accept(stranger.client, sent.body.id, sent.body.accept_token);
    expect(acceptByStranger.status).toBe(404);
    expect(acceptByStranger.body.error.code).toBe('gw_not_found');
    const declineByStranger = await decline(stranger.client, sent.body.id);
    expect(declineByStranger.status).toBe(404);
    // even an admin of the inviting organization cannot answer for the invitee
    expect((await accept(a.admin, sent.body.id, sent.body.accept_token)).status).toBe(404);
    const absent = await accept(stranger.client, 'inv_doesnotexist00000000');
    expect(absent.body).toEqual(acceptByStranger.body);

    expect(await statusOf(sent.body.id)).toBe('pending');
    expect(await membershipOf(a.orgId, stranger.id)).toBeNull();
    expect((await auditOf(a.orgId, sent.body.id)).map((entry) => entry.action)).toEqual([
      'invitation.create',
    ]);
    // the invitee still can
    expect((await accept(invitee.client, sent.body.id, sent.body.accept_token)).status).toBe(200);
  });
});

describe('the personal organization', () => {
  it('keeps its user as its owner: a second owner can neither remove nor demote them, and they cannot leave', async () => {
    const [holder, second] = await Promise.all([user('holder'), user('second')]);
    const sent = await invite(holder.client, holder.personalOrgId, second.email, 'owner');
    expect((await accept(second.client, sent.body.id, sent.body.accept_token)).status).toBe(200);
    // the list says whose personal organization it is, so the page offers no change there
    const listed = await second.client.request<{
      data: { user_id: string; personal_organization: boolean }[];
    }>('GET', `/dashboard/api/orgs/${holder.personalOrgId}/members`);
    expect(listed.body.data.map((row) => [row.user_id, row.personal_organization]).sort()).toEqual(
      [
        [holder.id, true],
        [second.id, false],
      ].sort(),
    );
    const member = `/dashboard/api/orgs/${holder.personalOrgId}/members/${holder.id}`;
    const removed = await second.client.request<ErrorBody>('DELETE', member);
    expect(removed.status).toBe(409);
    expect(removed.body.error.message).toBe(
      "this is the member's personal organization, which they always own: they cannot leave it or be removed",
    );
    const demoted = await second.client.request<ErrorBody>('PATCH', member, { role: 'viewer' });
    expect(demoted.status).toBe(409);
    expect(demoted.body.error.message).toMatch(/their role there cannot change/);
    expect((await holder.client.request('DELETE', member)).status).toBe(409);
    expect(await membershipOf(holder.personalOrgId, holder.id)).toBe('owner');
    // the second owner may still leave, and Postgres itself keeps the holder in place
    const left = await second.client.request(
      'DELETE',
      `/dashboard/api/orgs/${holder.personalOrgId}/members/${second.id}`,
    );
    expect(left.status).toBe(200);
    await expect(
      db.query('DELETE FROM org_memberships WHERE org_id = $1 AND user_id = $2', [
        holder.personalOrgId,
        holder.id,
      ]),
    ).rejects.toThrow('a user stays the owner of their personal organization');
    expect(await membershipOf(holder.personalOrgId, holder.id)).toBe('owner');
  });
});
