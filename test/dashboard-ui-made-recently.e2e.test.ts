// After a password reset, the dashboard leads to what the account made that still works
// (decisions 419, 421, 477): in a real browser (chromium) against a live gateway that sends e-mail to a
// real SMTP server, on the real Redis and Postgres. Someone with the password approved an OAuth
// app, made keys, invited an address of theirs as admin and added a webhook endpoint of theirs;
// the owner resets the password by the mailed link, signs in, is shown a
// banner, reads the list on the account page and revokes from it — through the key's own
// revoke route (a webhook endpoint's is a DELETE), which a role too low for it does not get a button for.
// A member the account let in or raised is removed from the organization, the confirmation says.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  createUser,
  DashboardClient,
  TEST_PASSWORD,
  uniqueEmail,
} from './support/dashboard.js';
import { linkToken, startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import { connectAndExchange, createOAuthClient } from './support/oauth.js';
import { runCli, seed, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { freePort } from './support/services.js';

const { env, db } = isolatedContext('dashboard-ui-made-recently', { ownDatabase: true });
const NEW_PASSWORD = 'a brand new passphrase, long enough';
const CALLBACK = 'http://127.0.0.1:9/callback';
const emails = {
  owner: uniqueEmail('made-owner').toLowerCase(),
  colleague: uniqueEmail('made-colleague').toLowerCase(),
};
let mail: MailCatcher;
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
/** Where the owner was an admin when the key was made, and is a member now. */
let demotedIn: SeededOrg;
let made: {
  apiKey: string;
  serviceKey: string;
  demotedKey: string;
  connection: string;
  webhook: string;
  invitation: string;
};

beforeAll(async () => {
  mail = await startMailCatcher();
  const port = await freePort();
  ui = await browserSuite(env, {
    seed: ['--name', 'Made Org'],
    users: { [emails.owner]: 'admin', [emails.colleague]: 'admin' },
    gatewayEnv: {
      PORT: String(port),
      SMTP_URL: mail.url,
      EMAIL_FROM: 'gw <no-reply@gw.example.test>',
      PUBLIC_ORIGIN: `http://127.0.0.1:${port}`,
    },
  });
  ({ gateway, browser, org } = ui);
  const maker = await seed(env, ['--name', 'Made Maker']);
  demotedIn = await seed(env, ['--name', 'Made Elsewhere']);
  const added = await runCli(
    [
      'admin',
      'add-member',
      '--email',
      emails.owner,
      '--org-id',
      demotedIn.org_id,
      '--role',
      'admin',
    ],
    env,
  );
  expect(added.code).toBe(0);
  const oauthClient = await createOAuthClient(env, maker.app_id, [CALLBACK], {
    name: 'Made Client',
  });

  // What whoever had the password made with the owner's account
  const intruder = await ui.client(emails.owner);
  const apiKey = await intruder.post<{ id: string }>(
    `/dashboard/api/connections/${org.app_connection_id}/api-keys`,
    { name: 'left behind' },
  );
  expect(apiKey.status).toBe(201);
  const serviceKey = await intruder.post<{ id: string }>(
    `/dashboard/api/orgs/${org.org_id}/service-keys`,
    {},
  );
  expect(serviceKey.status).toBe(201);
  const demotedKey = await intruder.post<{ id: string }>(
    `/dashboard/api/connections/${demotedIn.app_connection_id}/api-keys`,
    { name: 'elsewhere' },
  );
  expect(demotedKey.status).toBe(201);
  const approval = await connectAndExchange(gateway.url, intruder, oauthClient, {
    orgId: org.org_id,
  });
  const invitation = await intruder.post<{ id: string }>(
    `/dashboard/api/orgs/${org.org_id}/invitations`,
    { email: 'intruder@attacker.example', role: 'admin' },
  );
  expect(invitation.status).toBe(201);
  const webhook = await intruder.post<{ id: string }>(
    `/dashboard/api/orgs/${org.org_id}/webhooks`,
    {
      url: 'https://attacker.example/collect',
      description: 'Forwards every event to the archive of our compliance team',
    },
  );
  expect(webhook.status).toBe(201);
  made = {
    invitation: invitation.body.id,
    webhook: webhook.body.id,
    apiKey: apiKey.body.id,
    serviceKey: serviceKey.body.id,
    demotedKey: demotedKey.body.id,
    connection: approval.app_connection_id,
  };
  // A colleague's key in the same organization is not the owner's to review
  const colleague = await ui.client(emails.colleague);
  const theirs = await colleague.post(
    `/dashboard/api/connections/${org.app_connection_id}/api-keys`,
    { name: 'colleague key' },
  );
  expect(theirs.status).toBe(201);
  // Since then the owner is only a member there (an admin lowered their role)
  await db.query(
    `UPDATE org_memberships SET role = 'member'
      WHERE org_id = $1 AND user_id = (SELECT id FROM dashboard_users WHERE email = $2)`,
    [demotedIn.org_id, emails.owner],
  );
});

/** An API client signed in on this gateway (its Origin is PUBLIC_ORIGIN's). */
async function apiClient(email: string, password: string): Promise<DashboardClient> {
  const client = new DashboardClient(gateway.url, gateway.url);
  expect((await client.login(email, password)).status).toBe(200);
  return client;
}

afterAll(async () => {
  await ui?.close();
  await mail?.close();
});

describe('after a password reset', () => {
  it('a banner leads to what the account made; the account page lists it and revokes it', async () => {
    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/forgot-password`);
    await page.getByLabel('E-mail').fill(emails.owner);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('status').filter({ hasText: 'is on its way' }).waitFor();
    const { link } = linkToken((await mail.nth(emails.owner, 1)).text, 'password_reset_token');
    await page.goto(link);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('status').filter({ hasText: 'is reset' }).waitFor();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('E-mail').fill(emails.owner);
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    const banner = page.getByRole('region', {
      name: 'Your password was reset: review your account',
    });
    await banner.waitFor();
    expect(await banner.textContent()).toContain('keeps working');
    await screenshot(page, 'made-recently-01-banner');
    // another browser, which did not reset the password (a new profile: nothing stored), is
    // asked too (decision 513)
    const other = await openWindow(browser, { width: 390, height: 844 });
    await other.page.goto(`${gateway.url}/dashboard/`);
    await other.page.getByLabel('E-mail').fill(emails.owner);
    await other.page.getByLabel('Password').fill(NEW_PASSWORD);
    await other.page.getByRole('button', { name: 'Sign in' }).click();
    const otherBanner = other.page.getByRole('region', {
      name: 'Your password was reset: review your account',
    });
    await otherBanner.waitFor();
    await screenshot(other.page, 'made-recently-01b-banner-other-browser');
    await banner.getByRole('button', { name: 'Review what your account made' }).click();
    await page.waitForURL('**/dashboard/account');

    const section = page.getByRole('region', { name: 'Made by your account recently' });
    await section.waitFor();
    await section.getByText('Connected app', { exact: true }).waitFor();
    const listed = section.locator('tbody tr');
    await expect.poll(() => listed.count()).toBe(6);
    const text = (await section.textContent()) ?? '';
    expect(text).toContain('Invitation of intruder@attacker.example as admin');
    expect(text).toContain('Webhook endpoint https://attacker.example/collect');
    expect(text).toContain('Your password was reset on');
    expect(text).toContain('left behind');
    expect(text).toContain('Made Maker');
    expect(text).not.toContain('colleague key');
    // the key made where the owner is a member now: listed, no button, who can revoke it
    const elsewhere = listed.filter({ hasText: 'elsewhere' });
    expect(await elsewhere.getByRole('button').count()).toBe(0);
    expect(await elsewhere.textContent()).toContain(
      'Only an admin of Made Elsewhere can revoke it',
    );
    await screenshot(page, 'made-recently-02-account-list');
    // in a desktop window (1280 px) the whole list shows, its Revoke buttons too: the sentences
    // of its "What" column wrap, rather than push the buttons out of the table's box
    expect(
      await section.locator('.table-wrap').evaluate((box) => box.scrollWidth - box.clientWidth),
    ).toBe(0);

    // revoke the key left behind, from the list
    await listed
      .filter({ hasText: 'left behind' })
      .getByRole('button', { name: /^Revoke API key left behind/ })
      .click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await screenshot(page, 'made-recently-03-confirm');
    await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => listed.count()).toBe(5);
    expect(await section.textContent()).not.toContain('left behind');
    const { rows: keys } = await db.query<{ status: string }>(
      'SELECT status FROM api_keys WHERE id = $1',
      [made.apiKey],
    );
    expect(keys[0]!.status).toBe('revoked');

    // and the connected app: its connection is revoked
    await listed.filter({ hasText: 'Connected app' }).getByRole('button').click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke', exact: true }).click();
    await expect.poll(() => listed.count()).toBe(4);
    const { rows: connections } = await db.query<{ status: string }>(
      'SELECT status FROM app_connections WHERE id = $1',
      [made.connection],
    );
    expect(connections[0]!.status).toBe('revoked');

    // and the webhook endpoint sending to the intruder: deleted through its own route
    await listed
      .filter({ hasText: 'attacker.example/collect' })
      .getByRole('button', { name: /^Revoke Webhook endpoint https:\/\/attacker\.example/ })
      .click();
    const deleting = page.getByRole('dialog');
    await deleting.waitFor();
    expect(await deleting.textContent()).toContain('nothing more is sent to it');
    await screenshot(page, 'made-recently-04-confirm-webhook');
    await deleting.getByRole('button', { name: 'Revoke', exact: true }).click();
    await deleting.waitFor({ state: 'detached' });
    await expect.poll(() => listed.count()).toBe(3);
    expect(await section.textContent()).not.toContain('attacker.example/collect');
    const { rows: endpoints } = await db.query('SELECT 1 FROM webhook_endpoints WHERE id = $1', [
      made.webhook,
    ]);
    expect(endpoints).toEqual([]);
    // the invitation is still there, to revoke
    expect(await listed.filter({ hasText: 'intruder@attacker.example' }).count()).toBe(1);
    await screenshot(page, 'made-recently-05-after-revoke');

    // once read, the banner is not shown again in this browser, nor in the other one
    for (const window of [page, other.page]) {
      await window.goto(`${gateway.url}/dashboard/`);
      await window.getByRole('heading', { level: 1 }).waitFor();
      expect(
        await window
          .getByRole('region', { name: 'Your password was reset: review your account' })
          .count(),
      ).toBe(0);
    }
    const { rows: marks } = await db.query(
      'SELECT review_after_reset_at FROM dashboard_users WHERE email = $1',
      [emails.owner],
    );
    expect(marks).toEqual([{ review_after_reset_at: null }]);
    await other.close();
    await close();
  });

  it('dismissing the banner is remembered by the account, not the browser', async () => {
    // the colleague's password reset by link, from elsewhere (no browser of this test)
    const asker = new DashboardClient(gateway.url, gateway.url);
    const asked = await asker.post(
      '/auth/password-reset/request',
      { email: emails.colleague },
      { csrf: false },
    );
    expect(asked.status).toBe(202);
    const { token } = linkToken((await mail.nth(emails.colleague, 1)).text, 'password_reset_token');
    const confirmed = await asker.post(
      '/auth/password-reset/confirm',
      { token, new_password: NEW_PASSWORD },
      { csrf: false },
    );
    expect(confirmed.status).toBe(200);

    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/`);
    await page.getByLabel('E-mail').fill(emails.colleague);
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const banner = page.getByRole('region', {
      name: 'Your password was reset: review your account',
    });
    await banner.getByRole('button', { name: 'Dismiss' }).click();
    await banner.waitFor({ state: 'detached' });
    await expect
      .poll(async () => {
        const { rows } = await db.query<{ review_after_reset_at: Date | null }>(
          'SELECT review_after_reset_at FROM dashboard_users WHERE email = $1',
          [emails.colleague],
        );
        return rows[0]!.review_after_reset_at;
      })
      .toBeNull();
    // a new browser signing in is not asked again
    const other = await openWindow(browser);
    await other.page.goto(`${gateway.url}/dashboard/`);
    await other.page.getByLabel('E-mail').fill(emails.colleague);
    await other.page.getByLabel('Password').fill(NEW_PASSWORD);
    await other.page.getByRole('button', { name: 'Sign in' }).click();
    await other.page.getByRole('heading', { level: 1 }).waitFor();
    expect(
      await other.page
        .getByRole('region', { name: 'Your password was reset: review your account' })
        .count(),
    ).toBe(0);
    await other.close();
    await close();
  });

  it('a member the account let in or raised is listed; the confirmation says it removes them, and where else their role changes', async () => {
    // with the new password, the owner's account (whoever used it) raises a viewer to admin
    // and lets an accomplice in as admin
    const owner = await apiClient(emails.owner, NEW_PASSWORD);
    const raisedEmail = uniqueEmail('made-raised').toLowerCase();
    const raised = await createMember(env, raisedEmail, org.org_id, 'viewer');
    const changed = await owner.request(
      'PATCH',
      `/dashboard/api/orgs/${org.org_id}/members/${raised.id}`,
      { role: 'admin' },
    );
    expect(changed.status).toBe(200);
    const accompliceEmail = uniqueEmail('made-accomplice').toLowerCase();
    await createUser(env, accompliceEmail);
    const invitation = await owner.post<{ id: string; accept_token: string }>(
      `/dashboard/api/orgs/${org.org_id}/invitations`,
      { email: accompliceEmail, role: 'admin' },
    );
    expect(invitation.status).toBe(201);
    const accomplice = await apiClient(accompliceEmail, TEST_PASSWORD);
    const accepted = await accomplice.post(
      `/dashboard/api/user/invitations/${invitation.body.id}/accept`,
      { token: invitation.body.accept_token },
    );
    expect(accepted.status).toBe(200);
    // and the accomplice raises a third (decision 531): listed through them
    const thirdEmail = uniqueEmail('made-third').toLowerCase();
    const third = await createMember(env, thirdEmail, org.org_id, 'viewer');
    const raisedByAccomplice = await accomplice.request(
      'PATCH',
      `/dashboard/api/orgs/${org.org_id}/members/${third.id}`,
      { role: 'admin' },
    );
    expect(raisedByAccomplice.status).toBe(200);

    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/sign-in`);
    await page.getByLabel('E-mail').fill(emails.owner);
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => !url.pathname.endsWith('/sign-in'));
    await page.goto(`${gateway.url}/dashboard/account`);
    const section = page.getByRole('region', { name: 'Made by your account recently' });
    const listed = section.locator('tbody tr');
    const joinedRow = listed.filter({ hasText: accompliceEmail, hasNotText: thirdEmail });
    await joinedRow.waitFor();
    expect(await joinedRow.textContent()).toContain('joined through your invitation');
    await joinedRow
      .getByRole('button', { name: `Remove Member ${accompliceEmail} (admin)` })
      .click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.getByRole('heading').textContent()).toBe(
      `Remove ${accompliceEmail} from Made Org?`,
    );
    expect(await dialog.textContent()).toContain(
      `This removes ${accompliceEmail} from Made Org: they lose access to it at once`,
    );
    expect(await dialog.getByRole('link', { name: 'Members page' }).count()).toBe(0);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });

    const thirdRow = listed.filter({ hasText: thirdEmail });
    expect(await thirdRow.textContent()).toContain(
      `${accompliceEmail}, whom your account let in or raised, raised their role`,
    );
    await thirdRow.getByRole('button', { name: /^Remove Member/ }).click();
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(
      `If they should stay a member and only the role ${accompliceEmail} gave them (admin) is wrong`,
    );
    await screenshot(page, 'made-recently-06b-confirm-member-via');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });

    const raisedRow = listed.filter({ hasText: raisedEmail });
    expect(await raisedRow.textContent()).toContain('you raised their role; they still hold it');
    await raisedRow.getByRole('button', { name: /^Remove Member/ }).click();
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`This removes ${raisedEmail} from Made Org`);
    expect(await dialog.textContent()).toContain(
      'If they should stay a member and only the role you gave them (admin) is wrong, change their role on the Members page of Made Org instead.',
    );
    expect(await dialog.getByRole('link', { name: 'Members page' }).getAttribute('href')).toBe(
      `/dashboard/orgs/${org.org_id}/members`,
    );
    await screenshot(page, 'made-recently-06-confirm-member');
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => listed.filter({ hasText: raisedEmail }).count()).toBe(0);
    const { rows } = await db.query(
      'SELECT 1 FROM org_memberships WHERE org_id = $1 AND user_id = $2',
      [org.org_id, raised.id],
    );
    expect(rows).toEqual([]);
    expect(await joinedRow.count()).toBe(1);
    await close();
  });
});
