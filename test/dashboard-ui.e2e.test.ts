// The dashboard web app in a real browser (chromium) against a live gateway on the real Redis
// and Postgres: signing in and out, switching organizations, apps, connections and their
// settings, members, the audit log, models; what a viewer may not do; how it is served.
import { get } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  edgeShades,
  openWindow as openBrowserWindow,
  screenshot,
  screenshotOf,
  sidewaysOverflow,
  signIn as signInWith,
  statValue,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui');
const emails = {
  admin: uniqueEmail('admin'),
  viewer: uniqueEmail('viewer'),
  newcomer: uniqueEmail('newcomer'),
};
let ui: BrowserSuite;
let gateway: GatewayProcess;
let tenant: SeededOrg;

const openWindow = (viewport?: { width: number; height: number }) =>
  openBrowserWindow(ui.browser, viewport);

const signIn = (page: Page, email: string, password = TEST_PASSWORD): Promise<void> =>
  signInWith(page, gateway.url, email, password);

const signedIn = (page: Page, email: string): Promise<void> => ui.signIn(page, email);

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Acme Robotics'],
    users: { [emails.admin]: 'admin', [emails.viewer]: 'viewer', [emails.newcomer]: null },
  });
  ({ gateway, org: tenant } = ui);
});

afterAll(() => ui?.close());

describe('the dashboard in a browser', () => {
  it('refuses a wrong password with the gateway’s message', async () => {
    const { page, close } = await openWindow();
    await signIn(page, emails.admin, 'not the password at all');
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('wrong e-mail or password');
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await screenshot(page, '01-sign-in-error');
    await close();
  });

  it('lets an admin sign in, switch organization, create an app and a connection, change and revoke it, add a member, change their role and remove them, read the audit log and sign out', async () => {
    const { page, close } = await openWindow();
    await signedIn(page, emails.admin);

    // lands on Acme Robotics, where they are an admin, not on their empty personal organization
    await page.getByRole('heading', { level: 1, name: 'Acme Robotics' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/orgs/${tenant.org_id}`);
    await expect.poll(() => page.getByText('Your role here').textContent()).toContain('admin');

    // switches to their personal organization, and back to Acme Robotics
    await page
      .getByLabel('Organization')
      .selectOption({ label: `${emails.admin} (personal) (owner)` });
    await expect.poll(() => page.getByText('Your role here').textContent()).toContain('owner');
    await page.getByLabel('Organization').selectOption(tenant.org_id);
    await page.getByRole('heading', { name: 'Acme Robotics' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/orgs/${tenant.org_id}`);
    await expect.poll(() => statValue(page, /^Apps$/)).toBe('1');
    await screenshot(page, '02-overview');

    // creates an app
    await page.getByRole('link', { name: 'Apps & connections' }).click();
    await page.getByLabel('App name').fill('Support bot');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('link', { name: 'Support bot' }).waitFor();
    await screenshot(page, '03-apps');

    // opens it and creates a connection that only tracks credits
    await page.getByRole('link', { name: 'Support bot' }).click();
    await page.getByRole('heading', { name: 'Support bot', level: 1 }).waitFor();
    await page.getByText('No connections yet').waitFor();
    await page.getByLabel('Connection name').fill('Web widget');
    await page.locator('#new-credit-mode').selectOption('track_only');
    await page.getByRole('button', { name: 'Create connection' }).click();
    const card = page.getByRole('listitem').filter({ hasText: 'Web widget' });
    await card.waitFor();

    // changes its overrun policy and its attribution requirement
    await card.getByLabel('Overrun policy').selectOption('reject');
    await card.getByLabel(/Require a product user/).check();
    await card.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(async () => {
        const { rows } = await db.query<{
          credit_mode: string;
          overrun_policy: string;
          requires_product_user: boolean;
        }>(
          `SELECT c.credit_mode, c.overrun_policy, c.requires_product_user
             FROM app_connections c JOIN apps a ON a.id = c.app_id
            WHERE a.org_id = $1 AND c.name = 'Web widget'`,
          [tenant.org_id],
        );
        return rows;
      })
      .toEqual([
        { credit_mode: 'track_only', overrun_policy: 'reject', requires_product_user: true },
      ]);
    await expect
      .poll(() => card.getByRole('button', { name: 'Save settings' }).isDisabled())
      .toBe(true);
    await screenshot(page, '04-connections');

    // revokes it after a confirmation that says what will happen
    await card.getByRole('button', { name: 'Revoke…' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('stops working at once');
    await screenshot(page, '05-revoke-confirmation');
    await dialog.getByRole('button', { name: 'Revoke connection' }).click();
    await expect.poll(() => card.locator('.status').textContent()).toBe('revoked');

    // invites a member by e-mail; once the newcomer accepts, they are one
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('E-mail').fill(emails.newcomer);
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const pending = page
      .getByRole('region', { name: 'Pending invitations' })
      .getByRole('row')
      .filter({ hasText: emails.newcomer });
    await pending.waitFor();
    const newcomer = new DashboardClient(gateway.url, `http://127.0.0.1:${gateway.port}`);
    expect((await newcomer.login(emails.newcomer, TEST_PASSWORD)).status).toBe(200);
    const [invitation] = (
      await newcomer.get<{ data: { id: string }[] }>('/dashboard/api/user/invitations')
    ).body.data;
    expect(
      (await newcomer.post(`/dashboard/api/user/invitations/${invitation!.id}/accept`)).status,
    ).toBe(200);
    await page.reload();
    const row = page
      .getByRole('region', { name: 'Members' })
      .getByRole('row')
      .filter({ hasText: emails.newcomer });
    await row.waitFor();
    await expect.poll(() => row.getByRole('combobox').inputValue()).toBe('member');
    await screenshot(page, '06-members');

    // changes the newcomer's role
    const roleOf = async (email: string): Promise<string[]> => {
      const { rows } = await db.query<{ role: string }>(
        `SELECT m.role FROM org_memberships m JOIN dashboard_users u ON u.id = m.user_id
          WHERE m.org_id = $1 AND u.email = $2`,
        [tenant.org_id, email],
      );
      return rows.map((found) => found.role);
    };
    // choosing another role changes nothing until it is confirmed
    await row.getByRole('combobox').selectOption('viewer');
    expect(await roleOf(emails.newcomer)).toEqual(['member']);
    const change = row.getByRole('button', {
      name: `Change role of ${emails.newcomer} to viewer…`,
    });
    await change.click();
    const confirmRole = page.getByRole('dialog', { name: `Change ${emails.newcomer} to viewer?` });
    expect(await confirmRole.textContent()).toContain('from now on they are viewer');
    await confirmRole.getByRole('button', { name: 'Make them viewer' }).click();
    await expect.poll(() => roleOf(emails.newcomer)).toEqual(['viewer']);
    await confirmRole.waitFor({ state: 'detached' });

    // sees each of those writes in the audit log
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('table').waitFor();
    // the CLI's changes are there too (gw cap set, product-user block, …): the page says so
    await page.getByText('in the dashboard or with the operator’s gw CLI').waitFor();
    const actions = async () =>
      (await page.locator('tbody tr td:nth-child(3)').allTextContents()).slice(0, 8);
    await expect
      .poll(actions)
      .toEqual([
        'member.change_role',
        'invitation.accept',
        'member.add',
        'invitation.create',
        'connection.revoke',
        'connection.update',
        'connection.create',
        'app.create',
      ]);
    await screenshot(page, '07-audit-log');
    // its details (ids, e-mails, lists) wrap in their column: none is hidden behind a sideways
    // scroll of the table in a desktop window
    expect(
      await page.locator('.table-wrap').evaluate((box) => box.scrollWidth - box.clientWidth),
    ).toBe(0);

    // removes the newcomer after a confirmation
    await page.getByRole('link', { name: 'Members' }).click();
    await row.getByRole('button', { name: `Remove ${emails.newcomer}` }).click();
    await expect.poll(() => page.getByRole('dialog').textContent()).toContain('loses access');
    await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
    await row.waitFor({ state: 'detached' });
    expect(await roleOf(emails.newcomer)).toEqual([]);

    // models with their exact prices
    await page.getByRole('link', { name: 'Models & prices' }).click();
    await page.getByRole('cell', { name: 'vendor_b/gpt-4o-mini' }).waitFor();
    // input, output, cache write (five minutes · an hour) and cache read, per million tokens
    const haiku = page.getByRole('row', { name: /vendor_a\/claude-haiku-4-5/ });
    await expect
      .poll(() => haiku.getByRole('cell').allTextContents())
      .toEqual([
        'vendor_a/claude-haiku-4-5',
        'vendor_a',
        '1.00',
        '5.00',
        '1.25 · 2.00',
        '0.10',
        '8,192',
        'yes',
      ]);
    expect(await page.getByRole('main').textContent()).toContain(
      "a vendor's web search tool, at 0.01 USD per web search (vendor_a).",
    );
    await screenshot(page, '08-models');

    // signs out: the session is gone, and a deep link shows the sign-in page
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    const session = await page.evaluate(async () => (await fetch('/auth/session')).status);
    expect(session).toBe(401);
    await page.goto(`${gateway.url}/dashboard/orgs/${tenant.org_id}/apps`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await close();
  }, 60_000); // one long walk through the app: bounded, with room for a loaded machine

  it('shows a viewer no write controls, and the API’s refusal where their role is not enough', async () => {
    const { page, close } = await openWindow();
    await signedIn(page, emails.viewer);
    await page.goto(`${gateway.url}/dashboard/orgs/${tenant.org_id}/apps`);
    await page.getByRole('link', { name: 'Support bot' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create app' }).count()).toBe(0);

    await page.getByRole('link', { name: 'Support bot' }).click();
    await page.getByRole('heading', { name: 'Web widget' }).waitFor();
    expect(await page.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Revoke…' }).count()).toBe(0);

    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('table').waitFor();
    expect(await page.getByRole('button', { name: 'Send invitation' }).count()).toBe(0);
    expect(await page.getByRole('region', { name: 'Pending invitations' }).count()).toBe(0);

    // keys: hints to read, nothing to issue, rotate or revoke
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('cell', { name: `${tenant.api_key.slice(0, 10)}…` }).waitFor();
    expect(await page.getByRole('button', { name: 'Issue key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Rotate|Revoke)/ }).count()).toBe(0);
    await page.getByRole('link', { name: 'Service keys' }).click();
    await page.getByRole('cell', { name: `${tenant.service_key.slice(0, 10)}…` }).waitFor();
    expect(await page.getByRole('button', { name: 'Issue service key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Disable|Revoke)/ }).count()).toBe(0);

    // the audit log is for admins and owners: said plainly, not as the API's refusal
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page
      .getByText('Only admins and owners of this organization read its audit log.')
      .waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    await screenshot(page, '09-viewer-audit-log');
    await close();
  });

  it('lists every page in the navigation, none of them as coming soon', async () => {
    const { page, close } = await openWindow();
    await signedIn(page, emails.admin);
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    await nav.getByRole('link', { name: 'Caps' }).waitFor();
    expect(await nav.getByRole('link').allTextContents()).toEqual(
      expect.arrayContaining([
        'Caps',
        'Wallet',
        'Provider credentials',
        'Webhooks',
        'Connected apps',
      ]),
    );
    expect(await page.getByRole('list', { name: 'Coming soon' }).count()).toBe(0);
    expect(await page.getByText('soon', { exact: true }).count()).toBe(0);
    // this gateway takes no dashboard top-ups (DASHBOARD_WALLET_TOPUP is off): the wallet says
    // so and offers no form the API would refuse
    await nav.getByRole('link', { name: 'Wallet' }).click();
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    await page.getByText('This gateway takes no top-ups from the dashboard.').waitFor();
    expect(await page.getByRole('button', { name: 'Top up…' }).count()).toBe(0);
    await nav.getByRole('link', { name: 'Connected apps' }).click();
    await page.getByRole('heading', { name: 'Connected apps', level: 1 }).waitFor();
    await page.getByText('No app is connected to this organization.').waitFor();
    await screenshot(page, '11-connected-apps');
    await close();
  });

  it('fits a phone-sized screen', async () => {
    const { page, close } = await openWindow({ width: 390, height: 844 });
    await signedIn(page, emails.admin);
    await page.goto(`${gateway.url}/dashboard/orgs/${tenant.org_id}`);
    await page.getByRole('heading', { name: 'Acme Robotics' }).waitFor();
    await expect.poll(() => statValue(page, /^Apps$/)).toBe('2');
    await screenshot(page, '10-phone-overview');
    expect(await sidewaysOverflow(page)).toBe(0);
    // The navigation is one row wider than the screen, scrolled sideways: a shadow on the
    // side with more links (decision 474).
    const nav = page.locator('nav.sidebar');
    expect(await nav.evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(true);
    const atStart = await edgeShades(nav);
    expect(atStart.left).toBe(0);
    expect(atStart.right).toBeGreaterThan(20);
    await nav.evaluate((box) => {
      box.scrollLeft = box.scrollWidth;
    });
    const atEnd = await edgeShades(nav);
    expect(atEnd.left).toBeGreaterThan(20);
    expect(atEnd.right).toBe(0);
    await screenshotOf(nav, '10-phone-navigation-scrolled');
    // So is a table wider than the screen (its row actions at its right end), and a table that
    // fits its box has none.
    await nav.getByRole('link', { name: 'Apps & connections' }).click();
    const apps = page.locator('.table-wrap').first();
    await apps.locator('tbody tr').first().waitFor();
    expect(await apps.evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(true);
    const appsShades = await edgeShades(apps);
    expect(appsShades.left).toBe(0);
    expect(appsShades.right).toBeGreaterThan(20);
    await screenshot(page, '10-phone-apps');
    await page.setViewportSize({ width: 1280, height: 860 });
    expect(await apps.evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(false);
    expect(await edgeShades(apps)).toEqual({ left: 0, right: 0 });
    await close();
  });
});

describe('how the dashboard is served', () => {
  it('answers the page uncached with a strict Content-Security-Policy, on /dashboard/ and deep links', async () => {
    for (const path of ['/dashboard/', `/dashboard/orgs/${tenant.org_id}/apps/app_x`]) {
      const response = await fetch(`${gateway.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(await response.text()).toMatch(/\/dashboard\/assets\/main-\w+\.js/);
    }
    const bare = await fetch(`${gateway.url}/dashboard`, { redirect: 'manual' });
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/dashboard/');
  });

  it('answers hashed assets as immutable for a year, and unknown ones and API paths with 404 JSON', async () => {
    const html = await (await fetch(`${gateway.url}/dashboard/`)).text();
    const script = /\/dashboard\/assets\/(main-\w+\.js)/.exec(html)![1];
    const asset = await fetch(`${gateway.url}/dashboard/assets/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    // sent compressed as the browser accepts: the same bytes once decompressed
    const plain = await rawGet(`${gateway.url}/dashboard/assets/${script}`, {});
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    const brotli = await rawGet(`${gateway.url}/dashboard/assets/${script}`, {
      'accept-encoding': 'gzip, deflate, br',
    });
    expect(brotli.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(brotli.body).equals(plain.body)).toBe(true);
    expect(brotli.body.length).toBeLessThan(plain.body.length / 2);
    const gzip = await rawGet(`${gateway.url}/dashboard/assets/${script}`, {
      'accept-encoding': 'gzip, br;q=0',
    });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);

    const missing = await fetch(`${gateway.url}/dashboard/assets/main-NOPE.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('gw_not_found');

    // the app's catch-all never answers for the API
    const api = await fetch(`${gateway.url}/dashboard/api/no-such-thing`);
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toBe('application/json');
  });
});

/** A GET whose body comes back as sent (fetch would decompress it). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}
