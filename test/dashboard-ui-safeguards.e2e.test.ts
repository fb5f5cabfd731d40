// What keeps a dashboard user from doing what they did not mean, in a real browser (chromium)
// against a live gateway on the real Redis and Postgres: a role change confirmed before it is
// made (and the API's refusal shown in its dialog), amounts checked before anything asks to
// confirm them, focus given back when a dialog closes, no stale figures under an invalid usage
// range, errors that go once the input changes; and what it shows: names where the API gives
// ids, amounts as amounts, the product user's id, the app's own page or "no such app", the
// dashboard's own not-found page, the page a signed-out deep link asked for after signing in,
// and a webhook endpoint's last success once a test event is delivered. Every window fails its
// test if the page threw (see openWindow).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, sidewaysOverflow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson } from './support/http.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { WebhookReceiver, webhookEnv } from './support/webhook-receiver.js';

const { db, prefix } = isolatedContext('dashboard-ui-safeguards');
// this instance delivers webhooks (the test event of the webhooks page)
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
const emails = {
  owner: uniqueEmail('safeguards-owner'),
  admin: uniqueEmail('safeguards-admin'),
  viewer: uniqueEmail('safeguards-viewer'),
  member: uniqueEmail('safeguards-member'),
};
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let ownerPersonalOrg: string;
let api: DashboardClient;

/** `page` signed in as `email` (a session of the file's: these tests are about pages), at `path`. */
const signedIn = (page: Page, email: string, path = `/dashboard/orgs/${org.org_id}`) =>
  ui.visit(page, email, path);

/** The element that has focus: its aria-label, a button's text, or its tag. */
const focused = (page: Page): Promise<string | null> =>
  page.evaluate<string | null>(`(() => {
    const element = document.activeElement;
    if (!element) return null;
    return element.getAttribute('aria-label') ??
      (element.tagName === 'BUTTON' ? element.textContent : element.tagName);
  })()`);

beforeAll(async () => {
  await receiver.start();
  ui = await browserSuite(env, {
    gatewayEnv: { DASHBOARD_WALLET_TOPUP: 'true' },
    seed: ['--name', 'Safeguards Co', '--wallet', '100.00'],
    users: {
      [emails.owner]: 'owner',
      [emails.admin]: 'admin',
      [emails.viewer]: 'viewer',
      [emails.member]: 'member',
    },
  });
  ({ gateway, browser, org } = ui);
  ownerPersonalOrg = ui.users[emails.owner]!.personal_org_id;
  api = await ui.client(emails.admin);
  // a product user of the seeded app, made by a request that names them
  const answer = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    { ...bearer(org.api_key), 'x-gw-external-user-id': 'carol-42' },
  );
  expect(answer.status).toBe(200);
  await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
});

afterAll(async () => {
  await ui?.close();
  await receiver.stop();
});

const roleOf = async (email: string, orgId = org.org_id): Promise<string[]> => {
  const { rows } = await db.query<{ role: string }>(
    `SELECT m.role FROM org_memberships m JOIN dashboard_users u ON u.id = m.user_id
      WHERE m.org_id = $1 AND u.email = $2`,
    [orgId, email],
  );
  return rows.map((found) => found.role);
};

describe('members: a role changes only when the change is confirmed', () => {
  it('asks before making an admin an owner, changes nothing when cancelled, and gives focus back', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.owner, `/dashboard/orgs/${org.org_id}/members`);
    const row = page.getByRole('row').filter({ hasText: emails.admin });
    const role = row.getByRole('combobox', { name: `Role of ${emails.admin}` });
    await role.waitFor();

    // one arrow key in the list changes the choice, not the role
    await role.focus();
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => role.inputValue()).toBe('owner');
    expect(await roleOf(emails.admin)).toEqual(['admin']);

    const change = row.getByRole('button', {
      name: `Change role of ${emails.admin} to owner…`,
    });
    await change.click();
    const dialog = page.getByRole('dialog', { name: `Make ${emails.admin} an owner?` });
    expect(await dialog.textContent()).toContain('change or remove your role');
    await screenshot(page, 'safeguards-01-make-owner');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => role.inputValue()).toBe('admin');
    expect(await roleOf(emails.admin)).toEqual(['admin']);
    // the buttons that opened it are gone with the change: focus is on the role list
    await expect.poll(() => focused(page)).toBe('SELECT');

    // a confirmed change is made
    const other = page.getByRole('row').filter({ hasText: emails.member });
    await other.getByRole('combobox').selectOption('viewer');
    await other.getByRole('button', { name: `Change role of ${emails.member} to viewer…` }).click();
    await page
      .getByRole('dialog', { name: `Change ${emails.member} to viewer?` })
      .getByRole('button', { name: 'Make them viewer' })
      .click();
    await expect.poll(() => roleOf(emails.member)).toEqual(['viewer']);
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    // every dialog gives focus back to the button that opened it
    const remove = page.getByRole('button', { name: `Remove ${emails.viewer}` });
    await remove.click();
    await page.getByRole('dialog', { name: `Remove ${emails.viewer}?` }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => focused(page)).toBe(`Remove ${emails.viewer}`);
    await close();
  });

  it('shows the refusal of a sole owner demoting themself (409) in the dialog, without a page error', async () => {
    const { page, close } = await openWindow(browser);
    // the owner's own personal organization offers no role change and no Leave at all
    await signedIn(page, emails.owner, `/dashboard/orgs/${ownerPersonalOrg}/members`);
    const personalRow = page.getByRole('row').filter({ hasText: emails.owner });
    await personalRow.getByText('owner', { exact: true }).waitFor();
    expect(await personalRow.getByRole('combobox').count()).toBe(0);
    expect(await personalRow.getByRole('button').count()).toBe(0);
    // in an organization it is the sole owner of, the change is offered and refused
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/members`);
    const row = page.getByRole('row').filter({ hasText: emails.owner });
    await row.getByRole('combobox').selectOption('admin');
    await row.getByRole('button', { name: 'Change role (your own) to admin…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change your own role to admin?' });
    expect(await dialog.textContent()).toContain('Only an owner can give you a higher role back');
    await dialog.getByRole('button', { name: 'Make me admin' }).click();
    await expect
      .poll(() => dialog.getByRole('alert').textContent())
      .toBe('an organization keeps at least one owner (gw_conflict)');
    await screenshot(page, 'safeguards-02-sole-owner-refused');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => row.getByRole('combobox').inputValue()).toBe('owner');
    expect(await roleOf(emails.owner, org.org_id)).toEqual(['owner']);
    await close(); // fails on any page error
  });

  it('fits a 390 px screen without scrolling sideways', async () => {
    const { page, close } = await openWindow(browser, { width: 390, height: 844 });
    await signedIn(page, emails.owner, `/dashboard/orgs/${org.org_id}/members`);
    await page.getByRole('row').filter({ hasText: emails.admin }).waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'safeguards-03-members-390');
    await close();
  });
});

describe('amounts are checked before anything asks to confirm them', () => {
  it('refuses a top-up of abc, -5 or 1,000 in the form; confirms 25.5 as 25.50 USD; the history and the audit log show amounts and e-mails', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/wallet`);
    const amount = page.getByLabel('Amount (USD)');
    const cases: [string, string][] = [
      ['abc', 'Enter the amount as digits'],
      ['-5', 'Enter an amount that is not negative.'],
      ['1,000', 'no thousands separators'],
      ['0', 'Enter an amount above 0.'],
      ['1.0000000000001', 'at most 12 digits after the decimal point'],
    ];
    for (const [typed, message] of cases) {
      await amount.fill(typed);
      await page.getByRole('button', { name: 'Top up…' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain(message);
      expect(await page.getByRole('dialog').count()).toBe(0);
    }
    // typing again clears the message
    await amount.fill('25.5');
    await page.getByRole('alert').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Top up…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add 25.50 USD to the wallet?' });
    await dialog.getByRole('button', { name: 'Add funds' }).click();
    await page.getByText('Added 25.50 USD.').waitFor();

    const history = page.getByRole('region', { name: 'Top-ups and balance changes' });
    const topUp = history.getByRole('row').filter({ hasText: '+25.50 USD' });
    await expect.poll(() => topUp.textContent()).toContain(emails.admin);
    await screenshot(page, 'safeguards-04-wallet');

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/audit-log`);
    const entry = page.getByRole('row').filter({ hasText: 'wallet.topup' }).first();
    await expect.poll(() => entry.textContent()).toContain('amount: 25.50');
    expect(await page.content()).not.toContain('25.500000000000');
    await close();
  });

  it('asks before an organization cap of 0, refuses a cap of abc, and prefills the caps in force as money: 10.00 and 5.00, not empty or 5.000000000000', async () => {
    const put = await api.request(
      'PUT',
      `/dashboard/api/connections/${org.app_connection_id}/cap`,
      { amount: '5', per_user_amount: '0.25' },
    );
    expect(put.status).toBe(200);
    const orgCapPath = `/dashboard/api/orgs/${org.org_id}/cap`;
    expect((await api.request('PUT', orgCapPath, { amount: '10' })).status).toBe(200);
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/caps`);
    await expect
      .poll(() => page.getByLabel('Connection cap (USD, empty: none)').inputValue())
      .toBe('5.00');
    await expect.poll(() => page.getByLabel(/^Per-user default cap/).inputValue()).toBe('0.25');
    const orgCap = page.getByLabel('Monthly cap (USD)').first();
    await expect.poll(() => orgCap.inputValue()).toBe('10.00');
    await screenshot(page, 'safeguards-caps-prefilled');
    // the rest of this test asks about a first organization cap
    expect((await api.request('DELETE', orgCapPath)).status).toBe(200);
    await page.reload();
    await page.getByText('The organization has no cap.').waitFor();

    await orgCap.fill('abc');
    await page.getByRole('button', { name: 'Set organization cap' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('Enter the amount as digits');
    await page.getByLabel('Connection cap (USD, empty: none)').fill('5,5');
    await page.getByRole('button', { name: 'Save connection cap' }).click();
    await expect
      .poll(() => page.getByRole('alert').allTextContents())
      .toContainEqual(expect.stringContaining('no thousands separators'));

    await orgCap.fill('0');
    await page.getByRole('button', { name: 'Set organization cap' }).click();
    const dialog = page.getByRole('dialog', { name: 'Set the organization cap to 0?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => focused(page)).toBe('Set organization cap');
    const { rowCount } = await db.query(
      "SELECT 1 FROM cap_rules WHERE org_id = $1 AND scope = 'org' AND status = 'active'",
      [org.org_id],
    );
    expect(rowCount).toBe(0);
    await close();
  });
});

describe('what the pages show', () => {
  it('finds a product user’s cap by external id, and shows the product user’s id with a copy button', async () => {
    // carol-42's connection without a cap (an earlier test may have left one), put back after
    const connectionCapPath = `/dashboard/api/connections/${org.app_connection_id}/cap`;
    const before = await api.get<{
      cap: { amount: string | null; per_user_amount: string | null } | null;
    }>(connectionCapPath);
    expect((await api.request('DELETE', connectionCapPath)).status).toBe(200);
    const { page, close } = await openWindow(browser);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: gateway.url,
    });
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/caps`);
    const section = page.getByRole('region', { name: 'One product user’s cap' });
    const field = section.getByLabel(/^Product user: external id or name/);
    expect(await section.textContent()).toContain('pu_…');
    expect(await section.textContent()).not.toContain('peu_');
    await field.fill('carol');
    await section.getByRole('button', { name: 'Find' }).click();
    await section.getByRole('button', { name: 'carol-42' }).click();
    await section.getByText('This product user has no cap.').waitFor();
    await screenshot(page, 'safeguards-05-caps-find-user');
    // Capped only by their connection's per-user default: said so, not "no cap" (decision 587).
    const perUser = await api.request('PUT', connectionCapPath, {
      amount: null,
      per_user_amount: '1',
    });
    expect(perUser.status).toBe(200);
    await page.reload();
    await field.fill('carol');
    await section.getByRole('button', { name: 'Find' }).click();
    await section.getByRole('button', { name: 'carol-42' }).click();
    await section
      .getByText(/has no cap of their own: their connection’s per-user default caps them at/)
      .waitFor();
    expect(await section.textContent()).toContain('1.00 USD a month');
    const restored = before.body.cap
      ? await api.request('PUT', connectionCapPath, {
          amount: before.body.cap.amount,
          per_user_amount: before.body.cap.per_user_amount,
        })
      : await api.request('DELETE', connectionCapPath);
    expect(restored.status).toBe(200);

    const { rows } = await db.query<{ id: string }>(
      "SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = 'carol-42'",
      [org.org_id],
    );
    const userId = rows[0]!.id;
    expect(userId).toMatch(/^pu_/);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/users/${userId}`);
    await page.getByText(userId, { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Copy the product user id' }).click();
    await page.getByText('Copied.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(userId);
    // the user's app by its name
    await page.getByRole('link', { name: 'Seeded app' }).waitFor();

    // the list names the app too
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/users`);
    const row = page.getByRole('row').filter({ hasText: 'carol-42' });
    await expect.poll(() => row.textContent()).toContain('Seeded app');
    expect(await row.textContent()).not.toContain(org.app_id);
    await close();
  });

  it('shows no figures, chart or export for a usage range whose first day is after its last', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/usage`);
    await page.getByRole('button', { name: 'Export CSV' }).waitFor();
    await page.getByLabel('From (UTC day)').fill('2030-01-10');
    await page.getByLabel('Through (UTC day)').fill('2030-01-01');
    await page.getByText('The first day must not be after the last.').waitFor();
    expect(await page.getByRole('button', { name: 'Export CSV' }).count()).toBe(0);
    expect(await page.locator('.chart').count()).toBe(0);
    expect(await page.getByLabel('Totals of the range').count()).toBe(0);
    expect(await page.getByRole('table').count()).toBe(0);
    await screenshot(page, 'safeguards-06-usage-inverted');
    await close();
  });

  it('keeps the usage settings in the URL: a shared link opens the same view', async () => {
    const { page, close } = await openWindow(browser);
    const path = `/dashboard/orgs/${org.org_id}/usage`;
    await signedIn(
      page,
      emails.admin,
      `${path}?range=custom&from=2030-01-01&through=2030-01-05&group=model&plot=tokens`,
    );
    expect(await page.getByLabel('Range', { exact: true }).inputValue()).toBe('custom');
    expect(await page.getByLabel('From (UTC day)').inputValue()).toBe('2030-01-01');
    expect(await page.getByLabel('Through (UTC day)').inputValue()).toBe('2030-01-05');
    expect(await page.getByLabel('Group by').inputValue()).toBe('model');
    expect(await page.getByLabel('Plot', { exact: true }).inputValue()).toBe('tokens');
    await page
      .getByText('No requests between 2030-01-01 and 2030-01-05.', { exact: false })
      .waitFor();

    await page.getByLabel('Group by').selectOption('connection');
    await page.getByLabel('Range', { exact: true }).selectOption('7');
    await expect
      .poll(() => new URL(page.url()).search)
      .toBe('?range=7&group=connection&plot=tokens');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
    expect(await page.getByLabel('Group by').inputValue()).toBe('connection');
    expect(await page.getByLabel('Range', { exact: true }).inputValue()).toBe('7');
    await close();
  });

  it('renames and deletes an app after a confirmation, and says "no such app" for an unknown one', async () => {
    const created = await api.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/apps`, {
      name: 'Scratch app',
    });
    expect(created.status).toBe(201);
    const appId = created.body.id;
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/apps/${appId}`);
    await page.getByRole('heading', { level: 1, name: 'Scratch app' }).waitFor();
    const settings = page.getByRole('form', { name: 'App' });
    await settings.getByLabel('App name').fill('Scratch app 2');
    await settings.getByRole('button', { name: 'Rename app' }).click();
    await page.getByRole('heading', { level: 1, name: 'Scratch app 2' }).waitFor();
    const named = await db.query<{ name: string }>('SELECT name FROM apps WHERE id = $1', [appId]);
    expect(named.rows).toEqual([{ name: 'Scratch app 2' }]);

    await settings.getByRole('button', { name: 'Delete app…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete “Scratch app 2”?' });
    expect(await dialog.textContent()).toContain('cannot be restored');
    await dialog.getByRole('button', { name: 'Delete app' }).click();
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/dashboard/orgs/${org.org_id}/apps`);
    await page.getByRole('link', { name: 'Seeded app' }).waitFor();
    // the list may show what it read before the delete until it is read again
    await page.getByRole('link', { name: 'Scratch app 2' }).waitFor({ state: 'detached' });
    const deleted = await db.query<{ deleted: boolean }>(
      'SELECT deleted_at IS NOT NULL AS deleted FROM apps WHERE id = $1',
      [appId],
    );
    expect(deleted.rows).toEqual([{ deleted: true }]);

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/apps/app_nope`);
    await page.getByRole('heading', { level: 1, name: 'No such app' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create connection' }).count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(0);
    await close();
  });

  it('tells a viewer the audit log is for admins and owners, not the API’s error', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.viewer, `/dashboard/orgs/${org.org_id}/audit-log`);
    await page
      .getByText('Only admins and owners of this organization read its audit log.')
      .waitFor();
    expect(await page.content()).not.toContain('gw_role_forbidden');
    await close();
  });

  it('shows a webhook endpoint’s last success once a test event is delivered, without a reload', async () => {
    const url = receiver.endpoint('/hooks/gw');
    const created = await api.post<{ secret: string }>(
      `/dashboard/api/orgs/${org.org_id}/webhooks`,
      { url },
    );
    expect(created.status).toBe(201);
    receiver.setSecrets('/hooks/gw', [created.body.secret]);
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/webhooks`);
    const row = page.getByRole('row').filter({ hasText: '/hooks/gw' });
    await row.waitFor();
    // the column is found by its header: the table's columns change as the page grows
    const table = page.getByRole('table').filter({ has: row });
    const headers = await table.getByRole('columnheader').allTextContents();
    const column = headers.indexOf('Last success');
    expect(column).toBeGreaterThan(-1);
    const lastSuccess = row.getByRole('cell').nth(column);
    expect(await lastSuccess.textContent()).toBe('—');
    await row.getByRole('button', { name: `Send test to ${url}` }).click();
    await page.getByText(/Test event msg_\w+ queued/).waitFor();
    await expect.poll(() => lastSuccess.textContent(), { timeout: 20_000 }).toMatch(/\d/);
    await close();
  }, 40_000);

  it('keeps long webhook URLs readable on a phone: broken after slashes, never inside a word', async () => {
    const { page, close } = await openWindow(browser, { width: 390, height: 844 });
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/webhooks`);
    const url = page.locator('td code.url').first();
    await url.waitFor();
    // the column keeps room for a readable piece of the URL (it was ~3 characters wide)
    expect(await url.evaluate((element) => element.getBoundingClientRect().width)).toBeGreaterThan(
      150,
    );
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'safeguards-07-webhooks-390');
    await close();
  });

  it('keeps "Spent this month" on one line at 390 and 1440 px', async () => {
    for (const width of [390, 1440]) {
      const { page, close } = await openWindow(browser, { width, height: 900 });
      await signedIn(page, emails.admin);
      const value = page
        .locator('.stat')
        .filter({ hasText: 'Spent this month' })
        .locator('.money-value')
        .first();
      await value.waitFor();
      const lines = () =>
        value.evaluate((element) => {
          const view = globalThis as unknown as {
            getComputedStyle(target: unknown): { lineHeight: string };
          };
          const style = view.getComputedStyle(element);
          return element.getBoundingClientRect().height / Number.parseFloat(style.lineHeight);
        });
      // polled: the amount is fitted again when its card's width changes (a scroll bar that
      // comes with the chart), in the frame after the change
      await expect.poll(async () => Math.round(await lines())).toBe(1);
      await screenshot(page, `safeguards-08-overview-${width}`);
      await close();
    }
  });
});

describe('navigation', () => {
  it('returns to the page a signed-out deep link opened once signed in', async () => {
    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/wallet`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    // The sign-in page may render before the address bar is rewritten: wait for both.
    await expect
      .poll(() => new URL(page.url()).searchParams.get('next'))
      .toBe(`/dashboard/orgs/${org.org_id}/wallet`);
    await page.getByLabel('E-mail').fill(emails.admin);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/dashboard/orgs/${org.org_id}/wallet`);
    await close();
  });

  it('never returns to another site after signing in', async () => {
    const { page, close } = await openWindow(browser);
    await page.goto(
      `${gateway.url}/dashboard/sign-in?next=${encodeURIComponent('//evil.example/')}`,
    );
    await page.getByLabel('E-mail').fill(emails.admin);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(new URL(page.url()).origin).toBe(gateway.url);
    await close();
  });

  it('shows its own not-found page for an unknown dashboard path (404), the right page for a trailing slash; API and asset paths stay JSON', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    // the gateway knows these have no page: 404, with the app, which says so
    for (const path of ['/dashboard/no-such-page', '/dashboard/a/b', '/dashboard/no-such-page/']) {
      const response = await page.goto(`${gateway.url}${path}`);
      expect(response?.status(), path).toBe(404);
      expect(response?.headers()['content-type'], path).toBe('text/html; charset=utf-8');
      await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
      await page.getByRole('link', { name: 'Go to the overview' }).waitFor();
      expect(await page.title()).toBe('Not found · gw');
      if (path === '/dashboard/a/b') await screenshot(page, 'safeguards-09-not-found-deep');
    }
    // an organization's sections are the app's to know: 200, and the app's not-found page
    const unknownSection = await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/nope`);
    expect(unknownSection?.status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
    // a trailing slash opens the page without it
    const wallet = await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/wallet/`);
    expect(wallet?.status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    const models = await page.goto(`${gateway.url}/dashboard/models/`);
    expect(models?.status()).toBe(200);
    await page.getByRole('heading', { level: 1, name: 'Models & prices' }).waitFor();
    // /dashboard/orgs/ is your organizations: the app opens yours
    const orgs = await page.goto(`${gateway.url}/dashboard/orgs/`);
    expect(orgs?.status()).toBe(200);
    await expect.poll(() => new URL(page.url()).pathname).toMatch(/^\/dashboard\/orgs\/org_[^/]+$/);
    await page.getByRole('link', { name: 'Overview', exact: true }).waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).not.toBe('Page not found');
    await screenshot(page, 'safeguards-10-orgs-trailing-slash');
    await close();
    for (const path of [
      '/dashboard/api',
      '/dashboard/assets',
      '/dashboard/api/nope',
      '/dashboard/api/nope/',
      '/dashboard/assets/a/b',
    ]) {
      const answer = await fetch(`${gateway.url}${path}`);
      expect(answer.status, path).toBe(404);
      expect(answer.headers.get('content-type'), path).toBe('application/json');
      expect(((await answer.json()) as { error: { code: string } }).error.code, path).toBe(
        'gw_route_not_found',
      );
    }
    // writes to unknown paths are unknown (404), not a 405 naming the pages' GET
    for (const path of ['/dashboard/api/nope', '/dashboard/a/b', '/dashboard/no-such-page']) {
      const answer = await fetch(`${gateway.url}${path}`, { method: 'POST' });
      expect(answer.status, path).toBe(404);
      expect(answer.headers.get('content-type'), path).toBe('application/json');
    }
    // a path of the API with other methods still names them
    const wrongMethod = await fetch(
      `${gateway.url}/dashboard/api/orgs/${org.org_id}/wallet/top-ups`,
    );
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    const head = await fetch(`${gateway.url}/dashboard/a/b`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-type')]).toEqual([
      404,
      'text/html; charset=utf-8',
    ]);
  });
});

describe('names beyond the first page', () => {
  it('names the member who made a wallet change and a product user’s app among hundreds of members and apps', async () => {
    // 250 members and 250 apps older than the real ones: these come first in their lists,
    // so the admin and the seeded app are past the first page (200) of each
    const filler = Math.random().toString(36).slice(2, 10);
    await db.query(
      `WITH made AS (
         INSERT INTO dashboard_users (id, email, password_hash, personal_org_id, created_at)
         SELECT 'usr_fill' || $2 || lpad(i::text, 4, '0'), 'fill-' || $2 || '-' || i || '@example.com',
                'not-a-hash', $1, now() - interval '2 days'
           FROM generate_series(1, 250) AS i
         RETURNING id)
       INSERT INTO org_memberships (org_id, user_id, role, created_at)
       SELECT $1, id, 'viewer', now() - interval '1 day' FROM made`,
      [org.org_id, filler],
    );
    await db.query(
      `INSERT INTO apps (id, org_id, name, created_at)
       SELECT 'app_fill' || $2 || lpad(i::text, 4, '0'), $1, 'Filler app ' || i, now() - interval '1 day'
         FROM generate_series(1, 250) AS i`,
      [org.org_id, filler],
    );
    const firstMembers = await api.get<{ data: { email: string }[] }>(
      `/dashboard/api/orgs/${org.org_id}/members?limit=200`,
    );
    expect(firstMembers.body.data.map((member) => member.email)).not.toContain(emails.admin);
    const firstApps = await api.get<{ data: { id: string }[] }>(
      `/dashboard/api/orgs/${org.org_id}/apps?limit=200`,
    );
    expect(firstApps.body.data.map((app) => app.id)).not.toContain(org.app_id);

    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin, `/dashboard/orgs/${org.org_id}/wallet`);
    const history = page.getByRole('region', { name: 'Top-ups and balance changes' });
    const topUp = history.getByRole('row').filter({ hasText: '+25.50 USD' });
    await expect.poll(() => topUp.textContent()).toContain(emails.admin);
    await screenshot(page, 'safeguards-11-wallet-by-beyond-200');

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/users`);
    const row = page.getByRole('row').filter({ hasText: 'carol-42' });
    await expect.poll(() => row.textContent()).toContain('Seeded app');
    expect(await row.textContent()).not.toContain(org.app_id);
    await screenshot(page, 'safeguards-12-product-users-app-beyond-200');
    await close();
  });
});
