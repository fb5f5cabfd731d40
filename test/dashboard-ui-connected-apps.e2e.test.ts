// The Connected apps page in a real browser (chromium) on a 1000 px window and a 375 px phone:
// the list fits the window (no sideways scrolling of the page, nor of the table at 1000 px) with
// long names, a long e-mail address, a large cap and a revoked row; a connected app's caps are
// edited in the connection cap form the Caps page uses (decision 423), which asks before a cap
// at or below what the app spent this month (on the Caps page, before a cap of 0) and says
// that removing takes the per-user default too.
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dataRows,
  openWindow,
  requestsSent,
  screenshot,
  screenshotOf,
  sidewaysOverflow,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { connectAndExchange, type TokenAnswer } from './support/oauth.js';
import type { SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-connected-apps');
// one long word: an address that cannot break at a hyphen or a space
const admin = uniqueEmail('maximilianalexanderoppenheimer');
const APP = 'Quarterly Revenue Forecasting Assistant';
let ui: BrowserSuite;
let org: SeededOrg;
let api: DashboardClient;
let capped: TokenAnswer;

/** How far the table scrolls sideways in its own box (0: every column in view). */
const tableOverflow = (page: Page): Promise<number> =>
  page.evaluate<number>(
    "(() => { const wrap = document.querySelector('.table-wrap'); return wrap.scrollWidth - wrap.clientWidth; })()",
  );

/** Where a part of the page ends on the right, in CSS pixels from the window's left edge. */
async function rightEdge(part: Locator): Promise<number> {
  const box = (await part.boundingBox())!;
  return box.x + box.width;
}

beforeAll(async () => {
  ui = await browserSuite(env, { seed: ['--name', 'Wide Apps Co'], users: { [admin]: 'admin' } });
  org = ui.org;
  api = await ui.client(admin);
  const app = await api.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/apps`, {
    name: APP,
  });
  expect(app.status).toBe(201);
  const client = await api.post<{ client_id: string; redirect_uris: string[] }>(
    `/dashboard/api/apps/${app.body.id}/oauth-clients`,
    {
      name: 'Forecasting for Spreadsheets',
      redirect_uris: ['http://127.0.0.1:9/cb'],
      public: true,
    },
  );
  expect(client.status).toBe(201);
  capped = await connectAndExchange(ui.gateway.url, api, client.body, {
    orgId: org.org_id,
    capAmount: '250000.50',
  });
  const revoked = await connectAndExchange(ui.gateway.url, api, client.body, {
    orgId: org.org_id,
  });
  const revoke = await api.post(
    `/dashboard/api/connected-apps/${revoked.app_connection_id}/revoke`,
    {},
  );
  expect(revoke.status).toBe(200);
});

afterAll(() => ui?.close());

async function openList(page: Page): Promise<void> {
  await ui.visit(page, admin, `/dashboard/orgs/${org.org_id}/connected-apps`);
  // the header's row and the app's two
  await expect.poll(() => dataRows(page).count()).toBe(3);
}

describe('the Connected apps page on a 1000 px window', () => {
  it('fits the window: no sideways scrolling of the page or the table, Revoke in view', async () => {
    const { page, close } = await openWindow(ui.browser, { width: 1000, height: 800 });
    await openList(page);
    expect(await sidewaysOverflow(page)).toBe(0);
    expect(await tableOverflow(page)).toBeLessThanOrEqual(0);
    expect(
      await rightEdge(page.getByRole('button', { name: `Revoke ${APP}` })),
    ).toBeLessThanOrEqual(1000);
    // who connected it, under its name (the address broken rather than widening the table)
    // the top bar stays one line: the long address is cut short, Sign out beside it
    const brand = (await page.locator('.topbar .brand').boundingBox())!;
    const signOut = (await page.getByRole('button', { name: 'Sign out' }).boundingBox())!;
    expect(Math.abs(signOut.y + signOut.height / 2 - (brand.y + brand.height / 2))).toBeLessThan(8);
    expect(await page.locator('.topbar .who').getAttribute('title')).toBe(admin);
    const active = dataRows(page).filter({ has: page.getByText('active', { exact: true }) });
    expect(await active.getByRole('cell').first().innerText()).toContain(`by ${admin}`);
    await screenshot(page, 'connected-apps-01-1000');

    await page.getByRole('button', { name: `Edit cap of ${APP}` }).click();
    const card = page.getByRole('region', { name: `Caps of ${APP}` });
    await card.getByLabel('Connection cap (USD, empty: none)').waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    expect(await tableOverflow(page)).toBeLessThanOrEqual(0);
    await screenshotOf(card, 'connected-apps-02-cap-card-1000');
    await close();
  });
});

describe('a connected app’s caps, in the Caps page’s form', () => {
  it('starts from the cap set on the consent page, saves a per-user default the Caps page then shows, and removing says both go', async () => {
    const capPath = `/dashboard/api/connections/${capped.app_connection_id}/cap`;
    const { page, close } = await openWindow(ui.browser, { width: 1000, height: 900 });
    const puts = requestsSent(page, 'PUT', /\/cap$/);
    await openList(page);
    await page.getByRole('button', { name: `Edit cap of ${APP}` }).click();
    const card = page.getByRole('region', { name: `Caps of ${APP}` });
    const amount = card.getByLabel('Connection cap (USD, empty: none)');
    await expect.poll(() => amount.inputValue()).toBe('250000.50');
    await card.getByLabel('Per-user default cap (USD, empty: none)').fill('2.5');
    await card.getByRole('button', { name: 'Save connection cap' }).click();
    await card.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    // only what was changed is written: the cap stays as it was
    expect(puts).toHaveLength(1);
    const { rows } = await db.query(
      `SELECT amount::text, per_user_amount::text FROM cap_rules
        WHERE app_connection_id = $1 AND status = 'active'`,
      [capped.app_connection_id],
    );
    expect(rows).toEqual([{ amount: '250000.500000000000', per_user_amount: '2.500000000000' }]);
    await card.getByText(/^Per-user default:\s*2\.50\s*USD a month/).waitFor();

    // the Caps page shows the same connection's caps in the same form
    const caps = await openWindow(ui.browser, { width: 1000, height: 900 });
    await ui.visit(caps.page, admin, `/dashboard/orgs/${org.org_id}/caps`);
    await caps.page
      .getByRole('combobox', { name: 'Connection' })
      .selectOption(capped.app_connection_id);
    await expect
      .poll(() => caps.page.getByLabel('Connection cap (USD, empty: none)').inputValue())
      .toBe('250000.50');
    expect(await caps.page.getByLabel('Per-user default cap (USD, empty: none)').inputValue()).toBe(
      '2.50',
    );
    // there too a cap of 0 (at or below any spend) asks first; cancelled, nothing is written
    const capsPuts = requestsSent(caps.page, 'PUT', /\/cap$/);
    await caps.page.getByLabel('Connection cap (USD, empty: none)').fill('0');
    await caps.page.getByRole('button', { name: 'Save connection cap' }).click();
    const stopping = caps.page.getByRole('dialog', { name: 'Cap this connection at 0.00 USD?' });
    expect(await stopping.textContent()).toContain(
      'Every request of the connection that costs anything is refused with 403',
    );
    await stopping.getByRole('button', { name: 'Cancel' }).click();
    await stopping.waitFor({ state: 'detached' });
    expect(capsPuts).toEqual([]);
    await caps.close();

    // removing: the dialog says the per-user default goes with the cap, and so it does
    await card.getByRole('button', { name: 'Remove caps…' }).click();
    const dialog = page.getByRole('dialog', { name: `Remove the caps of ${APP}?` });
    expect(await dialog.textContent()).toContain('its per-user default both go');
    await dialog.getByRole('button', { name: 'Remove cap' }).click();
    await dialog.waitFor({ state: 'detached' });
    await card.getByRole('status').filter({ hasText: 'Caps removed.' }).waitFor();
    const cell = dataRows(page)
      .filter({ has: page.getByRole('button', { name: `Edit cap of ${APP}` }) })
      .locator('.cap-cell > span');
    await expect.poll(() => cell.innerText()).toBe('no cap');
    const after = await api.get<{ cap: unknown }>(capPath);
    expect(after.body.cap).toBeNull();
    await close();
  });
});

describe('the Connected apps page on a 375 px phone', () => {
  it('does not scroll sideways: the table scrolls in its own box; the cap card and its dialog fit', async () => {
    await api.request('PUT', `/dashboard/api/connections/${capped.app_connection_id}/cap`, {
      amount: '10',
    });
    const { page, close } = await openWindow(ui.browser, { width: 375, height: 812 });
    await openList(page);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'connected-apps-03-375');
    await page.getByRole('button', { name: `Edit cap of ${APP}` }).click();
    const card = page.getByRole('region', { name: `Caps of ${APP}` });
    const amount = card.getByLabel('Connection cap (USD, empty: none)');
    await expect.poll(() => amount.inputValue()).toBe('10.00');
    expect(await rightEdge(card)).toBeLessThanOrEqual(375);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(card, 'connected-apps-04-cap-card-375');
    await amount.fill('0');
    await card.getByRole('button', { name: 'Save connection cap' }).click();
    const dialog = page.getByRole('dialog', { name: `Cap ${APP} at 0.00 USD?` });
    await dialog.waitFor();
    expect(await rightEdge(dialog)).toBeLessThanOrEqual(375);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(dialog, 'connected-apps-05-confirm-375');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await close();
  });
});
