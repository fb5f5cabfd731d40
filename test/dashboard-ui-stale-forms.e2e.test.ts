// An edit form of the dashboard writes only what its user changed, in a real browser (chromium)
// against a live gateway on the real Redis and Postgres: a setting stored before the form was
// opened (a product user's own credit mode) is shown and kept, and a setting another admin
// changed while the form was open (a connection's per-user default cap, a credential's
// priority) is not written back with the value the form loaded. Every window fails its test if
// the page threw (see openWindow).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-stale-forms');
const emails = { admin: uniqueEmail('stale-admin'), other: uniqueEmail('stale-other-admin') };
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
/** The other admin, writing through the API while the browser's form is open. */
let other: DashboardClient;

/** `page` signed in as the admin (a session of the file's: these tests are about forms). */
async function signedIn(page: Page, section: string, heading: string): Promise<void> {
  await ui.visit(page, emails.admin, `/dashboard/orgs/${org.org_id}/${section}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Stale Forms Co', '--wallet', '100.00'],
    users: { [emails.admin]: 'admin', [emails.other]: 'admin' },
  });
  ({ gateway, browser, org } = ui);
  other = await ui.client(emails.other);
});

afterAll(() => ui?.close());

describe('edit forms write only what was changed', () => {
  it("keeps a product user's own credit mode when their cap's amount is changed", async () => {
    const put = await fetch(`${gateway.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${org.service_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'stale-user-1',
        display_name: 'Stale User',
      }),
    });
    expect(put.status).toBe(201);
    const userId = ((await put.json()) as { product_end_user_id: string }).product_end_user_id;
    const capPath = `/dashboard/api/product-users/${userId}/cap`;
    const set = await other.request('PUT', capPath, { amount: '5', credit_mode: 'track_only' });
    expect(set.status).toBe(200);

    const { page, close } = await openWindow(browser);
    await signedIn(page, 'caps', 'Caps');
    await page.getByLabel(/^Product user: external id or name/).fill('stale-user-1');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('button', { name: 'Stale User (stale-user-1)' }).click();
    const amount = page.getByLabel('Monthly cap (USD)').last();
    await expect.poll(() => amount.inputValue()).toBe('5.00');
    // the form shows the user's own setting, not "as the connection"
    await expect
      .poll(() =>
        page
          .getByRole('combobox', { name: /^Credit mode/ })
          .last()
          .inputValue(),
      )
      .toBe('track_only');
    // the amount and the two choices stand level, the chosen mode's hint below its choice
    const tops = await Promise.all(
      [
        amount,
        page.getByRole('combobox', { name: /^Credit mode/ }).last(),
        page.getByRole('combobox', { name: /^Overrun policy/ }).last(),
      ].map(async (field) => Math.round((await field.boundingBox())!.y)),
    );
    expect(new Set(tops).size, `tops ${tops.join(', ')}`).toBe(1);
    await amount.fill('7.50');
    await page.getByRole('button', { name: 'Set product user cap' }).click();
    await page.getByText(/Cap:\s*7\.50 USD a month/).waitFor();
    await screenshot(page, 'stale-forms-01-user-cap');

    const { rows } = await db.query(
      `SELECT amount::text, credit_mode, overrun_policy FROM cap_rules
        WHERE product_user_id = $1 AND status = 'active'`,
      [userId],
    );
    expect(rows).toEqual([
      { amount: '7.500000000000', credit_mode: 'track_only', overrun_policy: null },
    ]);
    await close();
  });

  it("does not write back a connection's per-user default cap another admin set while the form was open", async () => {
    const capPath = `/dashboard/api/connections/${org.app_connection_id}/cap`;
    expect((await other.request('PUT', capPath, { amount: '10' })).status).toBe(200);

    const { page, close } = await openWindow(browser);
    await signedIn(page, 'caps', 'Caps');
    const connectionCap = page.getByLabel('Connection cap (USD, empty: none)');
    await expect.poll(() => connectionCap.inputValue()).toBe('10.00');
    expect(await page.getByLabel('Per-user default cap (USD, empty: none)').inputValue()).toBe('');

    // meanwhile, another admin gives every product user a default cap and changes the mode
    const meanwhile = await other.request('PUT', capPath, {
      per_user_amount: '2',
      credit_mode: 'track_only',
    });
    expect(meanwhile.status).toBe(200);

    await connectionCap.fill('20');
    await page.getByRole('button', { name: 'Save connection cap' }).click();
    await page.getByText(/Connection cap:\s*20\.00 USD a month/).waitFor();
    await screenshot(page, 'stale-forms-02-connection-cap');

    const { rows } = await db.query(
      `SELECT r.amount::text, r.per_user_amount::text, c.credit_mode
         FROM cap_rules r JOIN app_connections c ON c.id = r.app_connection_id
        WHERE r.app_connection_id = $1 AND r.status = 'active'`,
      [org.app_connection_id],
    );
    expect(rows).toEqual([
      { amount: '20.000000000000', per_user_amount: '2.000000000000', credit_mode: 'track_only' },
    ]);
    // the form, reloaded after the save, shows the other admin's values it did not touch
    await expect
      .poll(() => page.getByLabel('Per-user default cap (USD, empty: none)').inputValue())
      .toBe('2.00');
    await close();
  });
  it("does not write back a credential's priority or a connection's credit mode another admin changed while their edit card was open", async () => {
    const created = await other.request<{ id: string }>(
      'POST',
      `/dashboard/api/orgs/${org.org_id}/credentials`,
      { provider: 'vendor_b', name: 'Shared key', secret: 'mock-ok-stale-forms-secret' },
    );
    expect(created.status).toBe(201);
    const credentialPath = `/dashboard/api/credentials/${created.body.id}`;

    const { page, close } = await openWindow(browser);
    await signedIn(page, 'provider-credentials', 'Provider credentials');
    await page.getByRole('button', { name: 'Edit Shared key' }).click();
    const edit = page.getByRole('region', { name: 'Edit Shared key' });
    await edit.getByLabel('Priority (1 is tried first)').waitFor();
    // meanwhile, another admin moves the credential to the back of the queue
    expect((await other.request('PATCH', credentialPath, { priority: 9 })).status).toBe(200);
    await edit.getByLabel('Name', { exact: true }).fill('Shared key (EU)');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText('Saved.', { exact: false }).waitFor();
    const { rows: credentials } = await db.query(
      'SELECT name, priority FROM provider_credentials WHERE id = $1',
      [created.body.id],
    );
    expect(credentials).toEqual([{ name: 'Shared key (EU)', priority: 9 }]);
    // the card, reloaded after the save, shows the priority it did not touch
    await expect.poll(() => edit.getByLabel('Priority (1 is tried first)').inputValue()).toBe('9');

    // a connection renamed on its app's page keeps the credit mode another admin just set
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/apps/${org.app_id}`);
    const card = page.getByRole('listitem').filter({ hasText: 'Seeded connection' });
    await card.getByLabel('Name').waitFor();
    const connectionPath = `/dashboard/api/connections/${org.app_connection_id}`;
    const modeNow = await db.query<{ credit_mode: string }>(
      'SELECT credit_mode FROM app_connections WHERE id = $1',
      [org.app_connection_id],
    );
    const otherMode = modeNow.rows[0]!.credit_mode === 'disabled' ? 'enforce' : 'disabled';
    expect((await other.request('PATCH', connectionPath, { credit_mode: otherMode })).status).toBe(
      200,
    );
    await card.getByLabel('Name').fill('Renamed connection');
    await card.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('heading', { name: 'Renamed connection' }).waitFor();
    await screenshot(page, 'stale-forms-03-connection-renamed');
    const { rows: connections } = await db.query(
      'SELECT name, credit_mode FROM app_connections WHERE id = $1',
      [org.app_connection_id],
    );
    expect(connections).toEqual([{ name: 'Renamed connection', credit_mode: otherMode }]);
    await close();
  });
});
