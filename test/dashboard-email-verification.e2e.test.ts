// Sign-up with e-mail verification (decision 370), against a real SMTP server (smtp-server),
// the real Redis and Postgres: a sign-up answers the same whatever the address, mails a
// verification link (or a notice to an address's owner), and until the link is followed the
// account can neither accept an invitation, approve an OAuth connection nor write in an
// organization; an address held unverified past its 24 hours is taken over by a new sign-up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/ids.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { linkToken, startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import { connect, createOAuthClient, pkcePair } from './support/oauth.js';
import { runCli, seed, startGateway, type GatewayProcess } from './support/processes.js';
import { deletePrefix } from './support/services.js';
import type { ErrorBody } from './support/http.js';

const { env, db, redis, prefix } = isolatedContext('email-verification', { ownDatabase: true });
const PUBLIC_ORIGIN = 'https://gw.example.test';
const OTHER_PASSWORD = 'somebody else entirely, typed here';
let mail: MailCatcher;
let gateway: GatewayProcess;

interface Session {
  user: { id: string; email: string; personal_org_id: string; email_verified: boolean };
}

beforeAll(async () => {
  mail = await startMailCatcher();
  gateway = await startGateway({
    ...env,
    DASHBOARD_SIGNUP: 'true',
    SMTP_URL: mail.url,
    EMAIL_FROM: 'no-reply@gw.example.test',
    PUBLIC_ORIGIN,
  });
});

afterAll(async () => {
  await gateway?.stop();
  await mail?.close();
});

const browser = () => new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`);

/** Forgets this file's counts, so a test starts with every allowance full. */
const resetThrottles = async () => {
  await deletePrefix(redis, `${prefix}:email-attempts`);
  await deletePrefix(redis, `${prefix}:signup-attempts`);
};

const signUp = (email: string, password = TEST_PASSWORD) =>
  browser().post<Record<string, unknown>>('/auth/signup', { email, password }, { csrf: false });

const verify = (token: string) =>
  browser().post<Record<string, unknown>>('/auth/verify-email', { token }, { csrf: false });

async function signedIn(email: string, password = TEST_PASSWORD): Promise<DashboardClient> {
  const client = browser();
  expect((await client.login(email, password)).status).toBe(200);
  return client;
}

/** What a sign-up's answer shows a caller, but its date and request id. */
const shape = (answer: Awaited<ReturnType<typeof signUp>>) => ({
  status: answer.status,
  body: { ...answer.body, email: '…' },
  headers: [...answer.headers.entries()].filter(
    ([name]) => name !== 'date' && name !== 'x-request-id',
  ),
});

describe('signing up where gw sends e-mail', () => {
  it('mails a verification link; until it is followed, the account may read but not write, join or connect', async () => {
    await resetThrottles();
    const email = uniqueEmail('Newcomer').toLowerCase();
    const answer = await signUp(email);
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ email, verification_sent: true });
    expect(answer.headers.get('set-cookie')).toBeNull();
    const received = await mail.nth(email, 1);
    expect(received.subject).toBe('Verify your e-mail address for the gw dashboard');
    const { link, token } = linkToken(received.text, 'email_verification_token');
    expect(link).toBe(`${PUBLIC_ORIGIN}/dashboard/#email_verification_token=${token}`);
    const { rows } = await db.query<{ verified: boolean; hold_hours: number }>(
      `SELECT email_verified_at IS NOT NULL AS verified,
              round(extract(epoch FROM email_hold_until - now()) / 3600)::int AS hold_hours
         FROM dashboard_users WHERE email = $1`,
      [email],
    );
    expect(rows).toEqual([{ verified: false, hold_hours: 24 }]);

    const user = await signedIn(email);
    const session = await user.get<Session>('/auth/session');
    expect(session.body.user.email_verified).toBe(false);
    const orgId = session.body.user.personal_org_id;
    // reads work
    expect((await user.get(`/dashboard/api/orgs/${orgId}/apps`)).status).toBe(200);
    // a write in its own organization does not
    const app = await user.post<ErrorBody>(`/dashboard/api/orgs/${orgId}/apps`, { name: 'x' });
    expect(app.status).toBe(403);
    expect(app.body.error.code).toBe('gw_email_unverified');
    expect(app.body.error.message).toContain(email);

    // an invitation, with its link: not while unverified
    const owner = uniqueEmail('Inviter').toLowerCase();
    const inviterCreated = await runCli(
      ['admin', 'create-user', '--email', owner, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(inviterCreated.code).toBe(0);
    const inviter = await signedIn(owner);
    const inviterOrg = (await inviter.get<Session>('/auth/session')).body.user.personal_org_id;
    const invitation = await inviter.post<{ id: string; accept_token: string }>(
      `/dashboard/api/orgs/${inviterOrg}/invitations`,
      { email, role: 'member' },
    );
    expect(invitation.status).toBe(201);
    const acceptPath = `/dashboard/api/user/invitations/${invitation.body.id}/accept`;
    const early = await user.post<ErrorBody>(acceptPath, { token: invitation.body.accept_token });
    expect(early.status).toBe(403);
    expect(early.body.error.code).toBe('gw_email_unverified');
    const declined = await user.post<ErrorBody>(
      `/dashboard/api/user/invitations/${invitation.body.id}/decline`,
    );
    expect(declined.status).toBe(403);

    // an OAuth approval: not while unverified
    const seeded = await seed(env);
    const oauthClient = await createOAuthClient(env, seeded.app_id, ['http://127.0.0.1:9/cb'], {
      public: true,
    });
    const approval = await connect(user, {
      clientId: oauthClient.client_id,
      redirectUri: 'http://127.0.0.1:9/cb',
      state: 's',
      challenge: pkcePair().challenge,
    });
    expect(approval.status).toBe(403);
    expect(approval.location).toBeNull();
    expect(approval.text).toContain('gw_email_unverified');

    // its own password and a new link: allowed
    const resent = await user.post('/auth/verify-email/resend');
    expect(resent.status).toBe(202);
    expect(resent.body).toEqual({ verification_sent: true, email });
    const second = linkToken((await mail.nth(email, 2)).text, 'email_verification_token');
    expect(second.token).not.toBe(token);

    // following the (first) link verifies the address, once
    const verified = await verify(token);
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({ email_verified: true, email });
    expect((await user.get<Session>('/auth/session')).body.user.email_verified).toBe(true);
    const again = await verify(token);
    expect(again.status).toBe(400);
    expect((again.body as unknown as ErrorBody).error.code).toBe('gw_email_token_invalid');
    expect(
      (await user.post(`/dashboard/api/orgs/${orgId}/apps`, { name: 'after verifying' })).status,
    ).toBe(201);
    expect((await user.post(acceptPath, { token: invitation.body.accept_token })).status).toBe(200);
    expect((await user.post('/auth/verify-email/resend')).status).toBe(409);
    const audit = await db.query<{ action: string }>(
      `SELECT action FROM dashboard_audit_log WHERE org_id = $1 AND action LIKE 'user.%'`,
      [orgId],
    );
    expect(audit.rows).toEqual([{ action: 'user.email_verify' }]);
    expect(gateway.output()).not.toContain(token);
  });

  it('refuses an expired verification link', async () => {
    await resetThrottles();
    const email = uniqueEmail('Slow').toLowerCase();
    expect((await signUp(email)).status).toBe(202);
    const { token } = linkToken((await mail.nth(email, 1)).text, 'email_verification_token');
    await db.query(
      `UPDATE dashboard_email_tokens SET expires_at = now() - interval '1 second'
        WHERE token_hash = $1`,
      [sha256Hex(token)],
    );
    const late = await verify(token);
    expect(late.status).toBe(400);
    expect((late.body as unknown as ErrorBody).error.code).toBe('gw_email_token_invalid');
    const { rows } = await db.query(
      'SELECT 1 FROM dashboard_users WHERE email = $1 AND email_verified_at IS NULL',
      [email],
    );
    expect(rows).toHaveLength(1);
  });

  it('hands an address held unverified past its 24 hours to the next sign-up: the squatter is out', async () => {
    await resetThrottles();
    const email = uniqueEmail('Squatted').toLowerCase();
    expect((await signUp(email, OTHER_PASSWORD)).status).toBe(202);
    const squatterLink = linkToken((await mail.nth(email, 1)).text, 'email_verification_token');
    const squatter = await signedIn(email, OTHER_PASSWORD);
    const before = await db.query<{ id: string; personal_org_id: string }>(
      'SELECT id, personal_org_id FROM dashboard_users WHERE email = $1',
      [email],
    );

    // within the 24 hours: the address stays held, its holder is sent a notice
    const early = await signUp(email);
    expect(early.status).toBe(202);
    const notice = await mail.nth(email, 2);
    expect(notice.subject).toBe('Someone tried to sign up to the gw dashboard with your address');
    expect((await browser().login(email, TEST_PASSWORD)).status).toBe(401);

    // past them (the hold's end moved back in Postgres): taken over
    await db.query(
      `UPDATE dashboard_users SET email_hold_until = now() - interval '1 second' WHERE email = $1`,
      [email],
    );
    const owner = await signUp(email);
    expect(owner.status).toBe(202);
    expect(shape(owner)).toEqual(shape(early));
    const ownerLink = linkToken((await mail.nth(email, 3)).text, 'email_verification_token');
    const ended = await squatter.get<ErrorBody>('/auth/session');
    expect(ended.status).toBe(401);
    expect(ended.body.error.code).toBe('gw_session_required');
    expect((await browser().login(email, OTHER_PASSWORD)).status).toBe(401);
    // the squatter's link died with their hold
    expect((await verify(squatterLink.token)).status).toBe(400);
    expect((await verify(ownerLink.token)).status).toBe(200);
    const user = await signedIn(email);
    expect((await user.get<Session>('/auth/session')).body.user.email_verified).toBe(true);
    const after = await db.query<{ id: string; personal_org_id: string }>(
      'SELECT id, personal_org_id FROM dashboard_users WHERE email = $1',
      [email],
    );
    expect(after.rows).toEqual(before.rows);
    const audit = await db.query<{ action: string }>(
      `SELECT action FROM dashboard_audit_log WHERE org_id = $1 AND action LIKE 'user.%' ORDER BY id`,
      [before.rows[0]!.personal_org_id],
    );
    expect(audit.rows).toEqual([
      { action: 'user.signup_takeover' },
      { action: 'user.email_verify' },
    ]);
  });

  it('shows a squatter none of the invitations addressed to the address it has not proved (decision 411)', async () => {
    await resetThrottles();
    // An organization invites a newcomer's address before they have an account.
    const inviterEmail = uniqueEmail('Hiring').toLowerCase();
    const created = await runCli(
      ['admin', 'create-user', '--email', inviterEmail, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(created.code).toBe(0);
    const inviter = await signedIn(inviterEmail);
    const inviterOrg = (await inviter.get<Session>('/auth/session')).body.user.personal_org_id;
    const newcomer = uniqueEmail('New-hire').toLowerCase();
    const invitation = await inviter.post<{ id: string }>(
      `/dashboard/api/orgs/${inviterOrg}/invitations`,
      { email: newcomer, role: 'admin' },
    );
    expect(invitation.status).toBe(201);

    // Someone who cannot read the newcomer's mail signs up with the address first and signs in.
    expect((await signUp(newcomer, OTHER_PASSWORD)).status).toBe(202);
    const squatter = await signedIn(newcomer, OTHER_PASSWORD);
    const listed = await squatter.get<{ data: unknown[]; next_cursor: string | null }>(
      '/dashboard/api/user/invitations',
    );
    expect(listed.status).toBe(200);
    // not the organization's name and id, the role, nor who invited (their e-mail)
    expect(listed.body).toEqual({ data: [], next_cursor: null });
    expect(JSON.stringify(listed.body)).not.toContain(inviterEmail);

    // Once the address is proved (its link followed), the invitation is there.
    const { token } = linkToken((await mail.nth(newcomer, 1)).text, 'email_verification_token');
    expect((await verify(token)).status).toBe(200);
    const proved = await squatter.get<{ data: Array<{ id: string; invited_by_email: string }> }>(
      '/dashboard/api/user/invitations',
    );
    expect(proved.body.data.map((row) => [row.id, row.invited_by_email])).toEqual([
      [invitation.body.id, inviterEmail],
    ]);
  });

  it("answers a verified owner's address as a new one, and mails its owner a notice instead", async () => {
    await resetThrottles();
    const owner = uniqueEmail('Owner').toLowerCase();
    const created = await runCli(
      ['admin', 'create-user', '--email', owner, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(created.code).toBe(0);
    const fresh = await signUp(uniqueEmail('Fresh').toLowerCase());
    const taken = await signUp(owner, OTHER_PASSWORD);
    expect(shape(taken)).toEqual(shape(fresh));
    const notice = await mail.nth(owner, 1);
    expect(notice.subject).toBe('Someone tried to sign up to the gw dashboard with your address');
    expect(notice.text).toContain(`${PUBLIC_ORIGIN}/dashboard/sign-in`);
    expect(notice.text).not.toMatch(/_token=/);
    expect((await browser().login(owner, OTHER_PASSWORD)).status).toBe(401);
    expect((await browser().login(owner, TEST_PASSWORD)).status).toBe(200);
    const { rows } = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [owner]);
    expect(rows).toHaveLength(1);
  });

  it('verifies an unverified address whose password is reset by e-mail (the link proved it)', async () => {
    await resetThrottles();
    const email = uniqueEmail('Resetter').toLowerCase();
    expect((await signUp(email)).status).toBe(202);
    await mail.nth(email, 1);
    const asked = await browser().post('/auth/password-reset/request', { email }, { csrf: false });
    expect(asked.status).toBe(202);
    const { token } = linkToken((await mail.nth(email, 2)).text, 'password_reset_token');
    const reset = await browser().post(
      '/auth/password-reset/confirm',
      { token, new_password: OTHER_PASSWORD },
      { csrf: false },
    );
    expect(reset.status).toBe(200);
    const user = await signedIn(email, OTHER_PASSWORD);
    expect((await user.get<Session>('/auth/session')).body.user.email_verified).toBe(true);
  });

  it('throttles sign-ups and resent links per address', async () => {
    await resetThrottles();
    const email = uniqueEmail('Flooded').toLowerCase();
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt += 1) statuses.push((await signUp(email)).status);
    // three from one client (decision 450)
    expect(statuses).toEqual([202, 202, 202, 429]);
    // the resends of the account share the address's count
    const user = await signedIn(email);
    const resent = await user.post<ErrorBody>('/auth/verify-email/resend');
    expect(resent.status).toBe(429);
    expect(resent.body.error.code).toBe('gw_too_many_attempts');
    expect(Number(resent.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts the tags of one mailbox (name+tag@host) as that mailbox (decision 460)', async () => {
    await resetThrottles();
    const [name, host] = uniqueEmail('tagged').toLowerCase().split('@') as [string, string];
    const statuses: number[] = [];
    for (let tag = 1; tag <= 4; tag += 1) {
      statuses.push((await signUp(`${name}+${tag}@${host}`)).status);
    }
    // three from one client to the one mailbox, whichever tag each names
    expect(statuses).toEqual([202, 202, 202, 429]);
    // a plain address beside it, of another mailbox, is its own
    expect((await signUp(`${name}x@${host}`)).status).toBe(202);
  });
});
