// Invitations in a browser (chromium) against a live gateway on the real Redis and Postgres:
// an admin invites from the members page and sees the invitation pending (and revokes one);
// the invited user finds it above whatever page they land on, accepts (and is taken to the
// organization) or declines; a viewer sees neither the form nor the pending list; nobody is
// offered to leave their own personal organization.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, screenshotOf, sidewaysOverflow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { createUser, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { linkToken, startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import { runCliJson, type GatewayProcess } from './support/processes.js';
import { freePort } from './support/services.js';

const { env, db } = isolatedContext('dashboard-ui-invites');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let orgId: string;
const emails = {
  admin: uniqueEmail('inv-admin'),
  viewer: uniqueEmail('inv-viewer'),
  joiner: uniqueEmail('inv-joiner'),
  decliner: uniqueEmail('inv-decliner'),
};
let joinerPersonalOrg: string;

const signedIn = (page: Page, email: string): Promise<void> => ui.signIn(page, email);

async function membersPage(page: Page): Promise<void> {
  await page.goto(`${gateway.url}/dashboard/orgs/${orgId}/members`);
  await page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
}

async function invite(page: Page, email: string, role: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Role', { exact: true }).selectOption(role);
  await page.getByRole('button', { name: 'Send invitation' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `Invited ${email} as ${role}.` })
    .waitFor();
}

const statusOf = async (email: string): Promise<string[]> =>
  (
    await db.query<{ status: string }>(
      'SELECT status FROM org_invitations WHERE org_id = $1 AND email = $2 ORDER BY created_at',
      [orgId, email],
    )
  ).rows.map((row) => row.status);

const roleIn = async (org: string, email: string): Promise<string | null> =>
  (
    await db.query<{ role: string }>(
      `SELECT m.role FROM org_memberships m JOIN dashboard_users u ON u.id = m.user_id
        WHERE m.org_id = $1 AND u.email = $2`,
      [org, email],
    )
  ).rows[0]?.role ?? null;

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Harbor Labs'],
    users: {
      [emails.admin]: 'admin',
      [emails.viewer]: 'viewer',
      [emails.joiner]: null,
      [emails.decliner]: null,
    },
  });
  ({ gateway, browser } = ui);
  orgId = ui.org.org_id;
  joinerPersonalOrg = ui.users[emails.joiner]!.personal_org_id;
});

afterAll(() => ui?.close());

describe('invitations in a browser', () => {
  it('an admin invites from the members page, sees the invitations pending, and revokes one', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await membersPage(page);
    // an admin invites no owner: the form does not offer it (read once its roles are shown)
    const roleOptions = page.getByLabel('Role', { exact: true }).locator('option');
    await roleOptions.first().waitFor({ state: 'attached' });
    const roles = await roleOptions.allTextContents();
    expect(roles.some((label) => label.startsWith('Owner'))).toBe(false);
    // each role is one word in the choice; what it may do is said under the form, for the
    // role chosen (a sentence in the option was cut off beside the e-mail field)
    expect(roles).toEqual(['Viewer', 'Member', 'Admin']);
    const roleChoice = page.getByLabel('Role', { exact: true });
    await roleChoice.selectOption('admin');
    await expect
      .poll(() => page.locator('#invite-role-hint').textContent())
      .toBe('Admin: Also manages apps, connections, keys and members.');
    expect(await roleChoice.getAttribute('aria-describedby')).toBe('invite-role-hint');
    await screenshotOf(page.locator('form').filter({ has: roleChoice }), 'invitations-role-hint');
    await invite(page, emails.joiner, 'member');
    await invite(page, emails.decliner, 'viewer');
    const stranger = uniqueEmail('inv-nobody');
    await invite(page, stranger, 'viewer');
    const pending = page.getByRole('region', { name: 'Pending invitations' });
    for (const email of [emails.joiner, emails.decliner, stranger]) {
      await pending.getByRole('row').filter({ hasText: email }).waitFor();
    }
    expect(await roleIn(orgId, emails.joiner)).toBeNull();
    await screenshot(page, 'invitations-01-members-pending');

    await pending.getByRole('button', { name: `Revoke the invitation of ${stranger}` }).click();
    const dialog = page.getByRole('dialog', { name: `Revoke the invitation of ${stranger}?` });
    await expect.poll(() => dialog.textContent()).toContain('can no longer accept it');
    await screenshotOf(dialog, 'invitations-02-revoke-confirmation');
    await dialog.getByRole('button', { name: 'Revoke invitation' }).click();
    await pending.getByRole('row').filter({ hasText: stranger }).waitFor({ state: 'detached' });
    expect(await statusOf(stranger)).toEqual(['revoked']);
    await close();
  });

  it('the invited user sees the invitation where they land, accepts, and is taken to the organization', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.joiner);
    // they land on their own organization, with the invitation above its page
    await expect.poll(() => new URL(page.url()).pathname).toContain(joinerPersonalOrg);
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain(
      `${emails.admin} invited you to join Harbor Labs as member.`,
    );
    await screenshot(page, 'invitations-03-banner-on-landing');
    // it follows them to any page
    await page
      .getByRole('navigation', { name: 'Dashboard' })
      .getByRole('link', { name: 'Members' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    await banner.waitFor();
    // their own personal organization offers no way to leave it
    expect(await page.getByRole('button', { name: /^Leave/ }).count()).toBe(0);

    await banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/dashboard/orgs/${orgId}`);
    await page.getByRole('heading', { level: 1, name: 'Harbor Labs' }).waitFor();
    await banner.waitFor({ state: 'detached' });
    // the organizations are read again after the accept: the new one is chosen once listed
    await expect
      .poll(() => page.getByRole('combobox', { name: 'Organization' }).inputValue())
      .toBe(orgId);
    expect(await roleIn(orgId, emails.joiner)).toBe('member');
    expect(await statusOf(emails.joiner)).toEqual(['accepted']);
    await screenshot(page, 'invitations-04-accepted');
    // a member of someone else's organization may leave it
    await page
      .getByRole('navigation', { name: 'Dashboard' })
      .getByRole('link', { name: 'Members' })
      .click();
    await page.getByRole('button', { name: 'Leave Harbor Labs' }).waitFor();
    await close();
  });

  it('the invited user may decline, on a phone: the invitation goes, and they join nothing', async () => {
    const { page, close } = await openWindow(browser, { width: 390, height: 844 });
    await signedIn(page, emails.decliner);
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(banner, 'invitations-05-banner-390');
    await banner.getByRole('button', { name: 'Decline the invitation to Harbor Labs' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await statusOf(emails.decliner)).toEqual(['declined']);
    expect(await roleIn(orgId, emails.decliner)).toBeNull();
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(await page.getByRole('region', { name: /invitation/ }).count()).toBe(0);
    await close();
  });

  it('shows a viewer neither the invitation form nor the pending invitations', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.viewer);
    await membersPage(page);
    await page.getByRole('region', { name: 'Members' }).getByRole('table').waitFor();
    expect(await page.getByRole('button', { name: 'Send invitation' }).count()).toBe(0);
    expect(await page.getByRole('region', { name: 'Pending invitations' }).count()).toBe(0);
    await close();
  });
});

describe('invitations in a browser, where anyone may sign up (decision 365)', () => {
  let open: GatewayProcess;
  beforeAll(async () => {
    open = await ui.startGateway({ DASHBOARD_SIGNUP: 'true' });
  });
  afterAll(async () => {
    await open?.stop();
  });

  it('the admin gets the link once; the invitee accepts only with it, filled in when they open it', async () => {
    const invitee = uniqueEmail('inv-linked');
    await runCliJson(
      ['admin', 'create-user', '--email', invitee, '--password', TEST_PASSWORD],
      env,
    );
    const admin = await openWindow(browser);
    await ui.signIn(admin.page, emails.admin, { gateway: open });
    await admin.page.goto(`${open.url}/dashboard/orgs/${orgId}/members`);
    await admin.page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    await admin.page.getByLabel('E-mail').fill(invitee);
    await admin.page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await admin.page.getByRole('button', { name: 'Send invitation' }).click();
    const shown = admin.page.getByRole('region', { name: `Invitation link for ${invitee}` });
    await shown.waitFor();
    expect(await shown.textContent()).toContain(`send this link to ${invitee} yourself`);
    const link = await shown.getByLabel('Invitation link').inputValue();
    expect(link).toMatch(
      new RegExp(`^${open.url}/dashboard/#invitation_token=gw_inv_[0-9A-Za-z]{43}$`),
    );
    await screenshotOf(shown, 'invitations-06-link-shown-once');
    await shown.getByRole('button', { name: 'I have stored it: hide the link' }).click();
    await shown.waitFor({ state: 'detached' });
    await admin.close();

    const { page, close } = await openWindow(browser);
    await ui.signIn(page, invitee, { gateway: open });
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    // without the link, Accept cannot be pressed; a wrong one is refused and changes nothing
    const accept = banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' });
    expect(await accept.isDisabled()).toBe(true);
    await banner.getByLabel(/Invitation link/).fill(`gw_inv_${'C'.repeat(43)}`);
    await accept.click();
    await banner.getByText(/no invitation with this id and accept token for you/).waitFor();
    expect(await roleIn(orgId, invitee)).toBeNull();

    // opened from the link, the banner has it (in place of the wrong one typed before)
    await page.goto(link);
    await banner.waitFor();
    await expect.poll(() => banner.getByLabel(/Invitation link/).inputValue()).toBe(tokenOf(link));
    await screenshotOf(banner, 'invitations-07-banner-with-link');
    await accept.click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/dashboard/orgs/${orgId}`);
    await banner.waitFor({ state: 'detached' });
    expect(await roleIn(orgId, invitee)).toBe('viewer');
    expect(await statusOf(invitee)).toEqual(['accepted']);
    await close();
  });

  /**
   * Invites `email` as a viewer through the API of a signed-in admin (their shared session: the
   * members page showing the link has the test above); answers the link on this gateway.
   */
  async function invitationLink(email: string): Promise<string> {
    const admin = await ui.client(emails.admin);
    const sent = await admin.post<{ accept_token: string }>(
      `/dashboard/api/orgs/${orgId}/invitations`,
      { email, role: 'viewer' },
    );
    expect(sent.status).toBe(201);
    return `${open.url}/dashboard/#invitation_token=${sent.body.accept_token}`;
  }

  it('keeps the link opened while signed out through signing in, and accepts with it', async () => {
    const invitee = uniqueEmail('inv-signed-out');
    await createUser(env, invitee);
    const link = await invitationLink(invitee);
    const { page, close } = await openWindow(browser);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByLabel('E-mail').fill(invitee);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    expect(await banner.getByLabel(/Invitation link/).inputValue()).toBe(tokenOf(link));
    await screenshotOf(banner, 'invitations-08-link-kept-through-sign-in');
    await banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await roleIn(orgId, invitee)).toBe('viewer');
    await close();
  });

  it('reads a link pasted into a tab already on the dashboard, for an invitation sent since it loaded', async () => {
    const invitee = uniqueEmail('inv-pasted');
    await createUser(env, invitee);
    const { page, close } = await openWindow(browser);
    await ui.signIn(page, invitee, { gateway: open });
    await page.goto(`${open.url}/dashboard/`);
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    expect(await banner.count()).toBe(0);
    // Sent while the tab is open; the invitee pastes the link into this tab's address bar:
    // only the fragment changes, the page is not loaded again.
    const link = await invitationLink(invitee);
    await page.evaluate(`location.hash = ${JSON.stringify(new URL(link).hash)}`);
    await banner.waitFor();
    await expect.poll(() => banner.getByLabel(/Invitation link/).inputValue()).toBe(tokenOf(link));
    expect(new URL(page.url()).hash).toBe('');
    await screenshotOf(banner, 'invitations-10-pasted-link');
    await banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await roleIn(orgId, invitee)).toBe('viewer');
    await close();
  });

  it('keeps the link opened by someone with no account through creating one, and accepts with it', async () => {
    const invitee = uniqueEmail('inv-new-person');
    const link = await invitationLink(invitee);
    const { page, close } = await openWindow(browser);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Create one' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await page.getByLabel('E-mail').fill(invitee);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    expect(await banner.getByLabel(/Invitation link/).inputValue()).toBe(tokenOf(link));
    await screenshot(page, 'invitations-09-link-kept-through-sign-up');
    await banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await roleIn(orgId, invitee)).toBe('viewer');
    await close();
  });
});

describe('an invitation link kept in the browser until it is used (decision 403)', () => {
  // a gateway where anyone may sign up and that sends e-mail: a new account verifies its
  // address through a mailed link before it may accept
  let mailing: GatewayProcess;
  let mail: MailCatcher;
  beforeAll(async () => {
    mail = await startMailCatcher();
    const port = await freePort();
    mailing = await ui.startGateway({
      PORT: String(port),
      DASHBOARD_SIGNUP: 'true',
      SMTP_URL: mail.url,
      EMAIL_FROM: 'gw <no-reply@gw.example.test>',
      PUBLIC_ORIGIN: `http://127.0.0.1:${port}`,
    });
  });
  afterAll(async () => {
    await mailing?.stop();
    await mail?.close();
  });

  /** Invites `email` as a viewer through a signed-in admin's API; answers the accept token. */
  async function acceptToken(email: string): Promise<string> {
    const admin = await ui.sessions.client(emails.admin);
    const sent = await admin.post<{ accept_token: string }>(
      `/dashboard/api/orgs/${orgId}/invitations`,
      { email, role: 'viewer' },
    );
    expect(sent.status).toBe(201);
    return sent.body.accept_token;
  }

  const kept = (page: Page): Promise<unknown> =>
    page.evaluate("localStorage.getItem('gw:invitation-link')");

  it('keeps the link through a closed tab, a sign-up and its verification in another tab, then accepts with it and forgets it', async () => {
    const invitee = uniqueEmail('inv-later');
    const token = await acceptToken(invitee);
    const { page, context, close } = await openWindow(browser);
    // the link opened while signed out, in a tab then closed: the token is out of the address bar
    await page.goto(`${mailing.url}/dashboard/#invitation_token=${token}`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    expect(page.url()).not.toContain(token);
    const later = await context.newPage();
    await page.close();

    // another tab: an account made, its address not verified yet
    await later.goto(`${mailing.url}/dashboard/sign-up`);
    await later.getByLabel('E-mail').fill(invitee);
    await later.getByLabel('Password').fill(TEST_PASSWORD);
    await later.getByRole('button', { name: 'Create account' }).click();
    await later.getByRole('region', { name: 'Verify your e-mail address' }).waitFor();
    await later.close();

    // the mailed link, opened in yet another tab: the invitation, with its link filled in
    const verified = await context.newPage();
    const { link } = linkToken((await mail.nth(invitee, 1)).text, 'email_verification_token');
    await verified.goto(link);
    await verified.getByText(`Your e-mail address ${invitee} is verified.`).waitFor();
    const banner = verified.getByRole('region', { name: 'You have an invitation' });
    await banner.waitFor();
    expect(await banner.getByLabel(/Invitation link/).inputValue()).toBe(token);
    await screenshotOf(banner, 'invitations-10-link-kept-through-verification');
    await banner.getByRole('button', { name: 'Accept the invitation to Harbor Labs' }).click();
    await expect.poll(() => new URL(verified.url()).pathname).toBe(`/dashboard/orgs/${orgId}`);
    expect(await roleIn(orgId, invitee)).toBe('viewer');
    expect(await kept(verified)).toBeNull();
    await verified.close();
    await close();
  });

  it('forgets the link once its invitation is declined', async () => {
    const invitee = uniqueEmail('inv-no-thanks');
    await createUser(env, invitee);
    const token = await acceptToken(invitee);
    const { page, close } = await openWindow(browser);
    await page.goto(`${mailing.url}/dashboard/#invitation_token=${token}`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    expect(await kept(page)).toContain(token);
    await ui.signIn(page, invitee, { gateway: mailing });
    const banner = page.getByRole('region', { name: 'You have an invitation' });
    await banner.getByRole('button', { name: 'Decline the invitation to Harbor Labs' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await statusOf(invitee)).toEqual(['declined']);
    expect(await kept(page)).toBeNull();
    await close();
  });
});

/** The accept token in an invitation link. */
const tokenOf = (link: string): string =>
  /invitation_token=(gw_inv_[0-9A-Za-z]{43})$/.exec(link)![1]!;
