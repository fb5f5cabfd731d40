// Text that reorders itself (Unicode bidirectional controls, Trojan Source) cannot pass for
// other text in the dashboard, in a real browser (chromium) against a live gateway on the real
// Redis and Postgres. Names an admin types refuse them (decision 311), and so does a webhook
// endpoint's description; a product user's external id and display name come from the app's
// end users and are stored as sent, so the dashboard shows each control as a visible mark
// (`‹U+202E›`) instead of letting it turn "bidi\u202Eevil" into "bidilive", and so is the
// reason the app gave a credit grant. Every window fails its test if the page threw (see
// openWindow).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataRows, openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-reordering-text');
const adminEmail = uniqueEmail('reordering-admin');
const RLO = '\u202e';
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let admin: DashboardClient;

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Reordering Co'],
    users: { [adminEmail]: 'admin' },
  });
  ({ gateway, browser, org } = ui);
  admin = await ui.client(adminEmail);
});

afterAll(() => ui?.close());

describe('text with bidirectional controls', () => {
  it("refuses them in a webhook endpoint's description, as in names, and stores nothing", async () => {
    const path = `/dashboard/api/orgs/${org.org_id}/webhooks`;
    const refused = await admin.post<{ error: { code: string; message: string } }>(path, {
      url: 'https://hooks.example.com/reordering',
      description: `Billing ${RLO}gnitset`,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('gw_invalid_request');
    expect(refused.body.error.message).toContain('description: must not contain bidirectional');
    const { rows } = await db.query('SELECT id FROM webhook_endpoints WHERE org_id = $1', [
      org.org_id,
    ]);
    expect(rows).toEqual([]);

    const created = await admin.post<{ id: string }>(path, {
      url: 'https://hooks.example.com/reordering',
      description: 'Billing',
    });
    expect(created.status).toBe(201);
    const changed = await admin.request<{ error: { code: string } }>(
      'PATCH',
      `${path}/${created.body.id}`,
      { description: `Billing ${RLO}gnitset` },
    );
    expect(changed.status).toBe(400);
    expect(changed.body.error.code).toBe('gw_invalid_request');
  });

  it("shows them as visible marks in a product user's external id and name", async () => {
    const put = await fetch(`${gateway.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${org.service_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: `bidi${RLO}evil`,
        display_name: `ad${RLO}nimda`,
      }),
    });
    expect(put.status).toBe(201);
    const userId = ((await put.json()) as { product_end_user_id: string }).product_end_user_id;
    // the app grants credits with a reason of its own, stored as sent
    const grant = await fetch(`${gateway.url}/product-users/by-external-id/credit-grants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.service_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: `bidi${RLO}evil`,
        amount: '1.00',
        currency: 'USD',
        reason: `refund ${RLO}lanigiro`,
      }),
    });
    expect(grant.status).toBe(201);

    const { page, close } = await openWindow(browser);
    await ui.visit(page, adminEmail, `/dashboard/orgs/${org.org_id}/users`);
    await page.getByRole('heading', { level: 1, name: 'Product users' }).waitFor();
    const row = dataRows(page).filter({ hasText: 'bidi' });
    const cells = row.getByRole('cell');
    // the headers are read once the row is shown (the heading comes before the table's rows)
    await row.waitFor();
    const headers = await page.getByRole('columnheader').allTextContents();
    const column = (name: string) => {
      const found = headers.findIndex((text) => text.trim() === name);
      expect(found, `column ${name} among ${headers.join(', ')}`).toBeGreaterThan(-1);
      return found;
    };
    expect(await cells.nth(column('External id')).textContent()).toBe('bidi‹U+202E›evil');
    expect(await cells.nth(column('Name')).textContent()).toBe('ad‹U+202E›nimda');
    await screenshot(page, 'reordering-01-product-users');

    await row.getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'ad‹U+202E›nimda' }).waitFor();
    await page.getByRole('cell', { name: 'refund ‹U+202E›lanigiro' }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain(RLO);
    await screenshot(page, 'reordering-02-product-user');
    expect(new URL(page.url()).pathname).toBe(
      `/dashboard/orgs/${org.org_id}/users/${encodeURIComponent(userId)}`,
    );
    await close();
  });
});
