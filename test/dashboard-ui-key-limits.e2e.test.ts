// An API key's request-rate limits on the dashboard's keys page (decision 344), in a real
// browser (chromium) against a live gateway on the real Redis and Postgres: set when a key is
// issued, shown in the list, changed and cleared on an existing key (a change that could refuse
// live traffic asks first; closed, focus back on its Edit button), a limit the API would refuse
// stopped in the form (and the API's own refusal shown when it answers one), no edit for
// viewers or members, an OAuth token's limits edited as a key's (not rotated), no key form on
// an OAuth connection (a note on where its token comes from instead), a connected app's limits
// shown and changed on the Connected apps page (decision 352), and the page on a 375 px phone
// without sideways scrolling.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFIRM_COLOURS,
  confirmButtonColour,
  dataRows,
  focusedButton,
  openWindow,
  requestsSent,
  screenshot,
  screenshotOf,
  sidewaysOverflow,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { connectAndExchange } from './support/oauth.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-key-limits');
const emails = {
  admin: uniqueEmail('limits-admin'),
  member: uniqueEmail('limits-member'),
  viewer: uniqueEmail('limits-viewer'),
};
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let api: DashboardClient;

interface IssuedKey {
  id: string;
  key: string;
}
const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const keysPath = () => `/dashboard/api/connections/${org.app_connection_id}/api-keys`;

/** `page` signed in as `email` (a session of the file's: these tests are about pages), at `path`. */
const signedIn = (page: Page, email: string, path: string): Promise<void> =>
  ui.visit(page, email, `/dashboard/orgs/${org.org_id}${path}`);

/** A key issued through the API (its raw value kept), with the given limits. */
async function issueKey(name: string, limits: Record<string, number | null>): Promise<IssuedKey> {
  const created = await api.post<IssuedKey>(keysPath(), { name, ...limits });
  expect(created.status).toBe(201);
  return created.body;
}

/** What Postgres holds as the limits of the connection's key named `name`. */
async function storedLimits(name: string): Promise<[number | null, number | null][]> {
  const { rows } = await db.query<{ rpm: number | null; user_rpm: number | null }>(
    `SELECT requests_per_minute AS rpm, product_user_requests_per_minute AS user_rpm
       FROM api_keys WHERE app_connection_id = $1 AND name = $2`,
    [org.app_connection_id, name],
  );
  return rows.map((row) => [row.rpm, row.user_rpm]);
}

/** The limits the "Rate limits" cell of the key row that holds `text` (its name or hint) shows
 * (without its Edit button). */
/**
 * Opens the edit card of `name`'s limits and waits until its first field has taken focus, as
 * the card gives it when it appears: filling another field before that, the focus (and the
 * text typed into it) could move to the first field under a loaded machine.
 */
async function openLimitsCard(page: Page, opener: Locator, name: string): Promise<Locator> {
  await opener.getByRole('button', { name: `Edit limits of ${name}` }).click();
  const card = page.getByRole('region', { name: `Rate limits of ${name}` });
  await card.waitFor();
  await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('edit-key-rpm');
  return card;
}

async function limitsCell(page: Page, text: string): Promise<string> {
  // the headers are read once the row is shown: before, the table may not be there yet
  const row = dataRows(page).filter({ hasText: text });
  await row.waitFor();
  const headers = await page
    .getByRole('region', { name: /^Keys of/ })
    .getByRole('columnheader')
    .allTextContents();
  const column = headers.indexOf('Rate limits');
  expect(column).toBeGreaterThan(-1);
  return (
    (await row.getByRole('cell').nth(column).locator('.limits-cell > span').textContent()) ?? ''
  );
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Limits Co'],
    users: { [emails.admin]: 'admin', [emails.member]: 'member', [emails.viewer]: 'viewer' },
  });
  ({ gateway, browser, org } = ui);
  api = await ui.client(emails.admin);
});

afterAll(() => ui?.close());

describe('issuing a key with rate limits', () => {
  it('stops a limit the API would refuse in the form, sending nothing; issues one with limits, shown in the list as stored', async () => {
    const { page, close } = await openWindow(browser);
    const posts = requestsSent(page, 'POST', /\/api-keys$/);
    await signedIn(page, emails.admin, `/keys/${org.app_connection_id}`);
    const form = page.getByRole('form', { name: 'Issue an API key' });
    const perKey = form.getByLabel('Requests per minute', { exact: true });
    const perUser = form.getByLabel('Per product user, requests per minute');
    // what each means, under it
    expect(await form.locator('#key-rpm-hint').textContent()).toBe(
      'Bursts of up to this many requests with the key, then this many a minute; more are refused (429). Empty: unlimited.',
    );
    expect(await form.locator('#key-user-rpm-hint').textContent()).toBe(
      'The same, counted for each product user of the key on their own. Empty: unlimited.',
    );

    await form.getByLabel('Key name (optional)').fill('refused');
    const digitsOnly =
      'enter a whole number with digits only, like 60 (no separators, spaces or decimals), or leave it empty for no limit.';
    for (const [field, typed, message] of [
      [perKey, '0', 'Requests per minute: enter at least 1, or leave it empty for no limit.'],
      [perKey, '1000001', 'Requests per minute: enter at most 1,000,000.'],
      [perKey, '60.5', `Requests per minute: ${digitsOnly}`],
      [perKey, '1,000', `Requests per minute: ${digitsOnly}`],
      [perKey, '-5', `Requests per minute: ${digitsOnly}`],
      [perKey, 'sixty', `Requests per minute: ${digitsOnly}`],
      [
        perUser,
        '0',
        'Per product user, requests per minute: enter at least 1, or leave it empty for no limit.',
      ],
    ] as const) {
      await perKey.fill('');
      await perUser.fill('');
      await field.fill(typed);
      await form.getByRole('button', { name: 'Issue key' }).click();
      await expect.poll(() => form.getByRole('alert').textContent()).toBe(message);
    }
    await screenshotOf(form, 'key-limits-01-refused-in-form');
    // typing again clears the note
    await perUser.fill('');
    await form.getByRole('alert').waitFor({ state: 'detached' });
    expect(posts).toEqual([]);
    expect(await storedLimits('refused')).toEqual([]);

    // both limits, the largest the API takes as one of them
    await form.getByLabel('Key name (optional)').fill('checkout');
    await perKey.fill(' 1000000 ');
    await perUser.fill('10');
    await form.getByRole('button', { name: 'Issue key' }).click();
    const shownOnce = page.getByRole('region', { name: 'Your new API key “checkout”' });
    await shownOnce.waitFor();
    expect(await storedLimits('checkout')).toEqual([[1_000_000, 10]]);
    await expect.poll(() => limitsCell(page, 'checkout')).toBe('1,000,000/min · 10/min per user');
    // the form is empty again: the next key starts unlimited
    await expect.poll(() => perKey.inputValue()).toBe('');
    await expect.poll(() => perUser.inputValue()).toBe('');
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();

    // none: unlimited, as every key made before limits existed (the seeded one)
    await form.getByLabel('Key name (optional)').fill('open-door');
    await form.getByRole('button', { name: 'Issue key' }).click();
    await page.getByRole('region', { name: 'Your new API key “open-door”' }).waitFor();
    expect(await storedLimits('open-door')).toEqual([[null, null]]);
    await expect.poll(() => limitsCell(page, 'open-door')).toBe('unlimited');
    await expect.poll(() => limitsCell(page, org.api_key.slice(0, 10))).toBe('unlimited');
    // only the per-user limit
    await form.getByLabel('Key name (optional)').fill('per-user-only');
    await perUser.fill('30');
    await form.getByRole('button', { name: 'Issue key' }).click();
    await page.getByRole('region', { name: 'Your new API key “per-user-only”' }).waitFor();
    expect(await storedLimits('per-user-only')).toEqual([[null, 30]]);
    await expect.poll(() => limitsCell(page, 'per-user-only')).toBe('unlimited · 30/min per user');
    expect(posts).toHaveLength(3);
    await screenshot(page, 'key-limits-02-issued');
    await close();
  });

  it('shows the API’s own refusal when it answers one, and issues nothing', async () => {
    const { page, close } = await openWindow(browser);
    // a gateway whose rule is stricter than the page's: the request leaves the page with a
    // limit it passed, and the API refuses what arrives
    await page.route('**/dashboard/api/connections/*/api-keys', async (route) => {
      const request = route.request();
      if (request.method() !== 'POST') return route.continue();
      const body = JSON.parse(request.postData() ?? '{}') as Record<string, unknown>;
      await route.continue({
        postData: JSON.stringify({ ...body, product_user_requests_per_minute: 1_000_001 }),
      });
    });
    await signedIn(page, emails.admin, `/keys/${org.app_connection_id}`);
    const form = page.getByRole('form', { name: 'Issue an API key' });
    await form.getByLabel('Key name (optional)').fill('api-refused');
    await form.getByLabel('Per product user, requests per minute').fill('5');
    await form.getByRole('button', { name: 'Issue key' }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toBe('product_user_requests_per_minute: must be at most 1000000 (gw_invalid_request)');
    expect(await page.getByRole('region', { name: /Your new API key/ }).count()).toBe(0);
    expect(await storedLimits('api-refused')).toEqual([]);
    await close();
  });
});

describe('changing an existing key’s rate limits', () => {
  it('asks before setting or lowering one (cancelled: nothing sent), not before raising or clearing; the list, Postgres and the gateway follow', async () => {
    const issued = await issueKey('batch-jobs', {
      requests_per_minute: 60,
      product_user_requests_per_minute: 10,
    });
    const { page, close } = await openWindow(browser);
    const patches = requestsSent(page, 'PATCH', /\/api-keys\/[^/]+$/);
    await signedIn(page, emails.admin, `/keys/${org.app_connection_id}`);
    await expect.poll(() => limitsCell(page, 'batch-jobs')).toBe('60/min · 10/min per user');

    const card = await openLimitsCard(page, page.locator('body'), 'batch-jobs');
    const perKey = card.getByLabel('Requests per minute', { exact: true });
    const perUser = card.getByLabel('Per product user, requests per minute');
    // it starts with the limits in force, the first field ready to type in
    expect(await perKey.inputValue()).toBe('60');
    expect(await perUser.inputValue()).toBe('10');
    expect(await page.evaluate('document.activeElement.id')).toBe('edit-key-rpm');
    // what is in force, said above the fields
    const inForce = async () =>
      (await card.getByText(/^Now:/).textContent())?.replace(/ A change .*$/, '');
    expect(await inForce()).toBe('Now: 60/min · 10/min per user.');

    // refused in the form: nothing sent
    await perKey.fill('1000001');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await expect
      .poll(() => card.getByRole('alert').textContent())
      .toBe('Requests per minute: enter at most 1,000,000.');
    expect(await page.getByRole('dialog').count()).toBe(0);

    // lowering asks first, naming both limits
    await perKey.fill('1');
    await card.getByRole('button', { name: 'Save limits' }).click();
    const dialog = page.getByRole('dialog', { name: 'Lower the rate limits of batch-jobs?' });
    await dialog.waitFor();
    const facts = await dialog.locator('.facts').innerText();
    expect(facts).toMatch(/Requests per minute\s+60\/min → 1\/min/);
    expect(facts).toMatch(/Per product user\s+10\/min \(unchanged\)/);
    expect(await dialog.textContent()).toContain('refused with 429');
    // it can refuse live traffic: its button is red
    expect(await confirmButtonColour(dialog)).toBe(CONFIRM_COLOURS.destructive);
    await screenshotOf(dialog, 'key-limits-03-lower-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(patches).toEqual([]);
    expect(await storedLimits('batch-jobs')).toEqual([[60, 10]]);

    // confirmed: saved, shown, stored, audited, and applied by the gateway
    await card.getByRole('button', { name: 'Save limits' }).click();
    await dialog.getByRole('button', { name: 'Lower limits' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => inForce()).toBe('Now: 1/min · 10/min per user.');
    expect(await card.getByRole('status').textContent()).toBe('Saved.');
    await expect.poll(() => limitsCell(page, 'batch-jobs')).toBe('1/min · 10/min per user');
    expect(await storedLimits('batch-jobs')).toEqual([[1, 10]]);
    expect(patches).toHaveLength(1);
    const audit = await db.query<{ details: unknown }>(
      `SELECT details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'api_key.update'`,
      [issued.id],
    );
    expect(audit.rows).toEqual([
      {
        details: {
          requests_per_minute: 1,
          product_user_requests_per_minute: 10,
          previous_requests_per_minute: 60,
          previous_product_user_requests_per_minute: 10,
        },
      },
    ]);
    const infer = () =>
      postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, bearer(issued.key));
    expect((await infer()).status).toBe(200);
    const refused = await infer();
    expect([
      refused.status,
      refused.body.error?.code,
      refused.body.error?.rate_limit_scope,
    ]).toEqual([429, 'gw_rate_limited', 'key']);
    await screenshot(page, 'key-limits-04-lowered');

    // raising one and clearing the other: saved at once (what is typed while "Saved." shows
    // is kept: the notice going does not put the old value back)
    await perKey.fill('');
    await perUser.fill('50');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => inForce()).toBe('Now: unlimited · 50/min per user.');
    expect(await card.getByRole('status').textContent()).toBe('Saved.');
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(await storedLimits('batch-jobs')).toEqual([[null, 50]]);
    await expect.poll(() => limitsCell(page, 'batch-jobs')).toBe('unlimited · 50/min per user');
    expect((await infer()).status).toBe(200);

    // both cleared: unlimited
    await perUser.fill('');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => inForce()).toBe('Now: unlimited.');
    expect(await storedLimits('batch-jobs')).toEqual([[null, null]]);
    await expect.poll(() => limitsCell(page, 'batch-jobs')).toBe('unlimited');
    expect(patches).toHaveLength(3);

    // a limit where there was none asks too (it may refuse requests that pass now)
    await perUser.fill('5');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await dialog.waitFor();
    expect(await dialog.locator('.facts').innerText()).toMatch(
      /Requests per minute\s+unlimited \(unchanged\)\s+Per product user\s+unlimited → 5\/min/,
    );
    await dialog.getByRole('button', { name: 'Lower limits' }).click();
    await expect.poll(() => limitsCell(page, 'batch-jobs')).toBe('unlimited · 5/min per user');
    expect(await storedLimits('batch-jobs')).toEqual([[null, 5]]);

    // closed: the card goes, the list stays, and focus is back on the Edit button that opened
    // it (not lost at the page's start)
    await card.getByRole('button', { name: 'Close' }).click();
    await card.waitFor({ state: 'detached' });
    await expect.poll(() => focusedButton(page)).toBe('Edit limits of batch-jobs');
    // the keyboard opens it again from there
    await page.keyboard.press('Enter');
    await card.waitFor();
    await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('edit-key-rpm');
    await card.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => focusedButton(page)).toBe('Edit limits of batch-jobs');
    await close();
  });
});

describe('two admins changing one key’s limits', () => {
  it('sends only the limit changed: another admin’s change to the other one meanwhile stays', async () => {
    const issued = await issueKey('shared-limits', {
      requests_per_minute: 60,
      product_user_requests_per_minute: 10,
    });
    const { page, close } = await openWindow(browser);
    const patches = requestsSent(page, 'PATCH', /\/api-keys\/[^/]+$/);
    await signedIn(page, emails.admin, `/keys/${org.app_connection_id}`);
    await expect.poll(() => limitsCell(page, 'shared-limits')).toBe('60/min · 10/min per user');
    const card = await openLimitsCard(page, page.locator('body'), 'shared-limits');
    // while the card is open, another admin raises the per-user limit
    const other = await api.request('PATCH', `/dashboard/api/api-keys/${issued.id}`, {
      product_user_requests_per_minute: 30,
    });
    expect(other.status).toBe(200);
    await card.getByLabel('Requests per minute', { exact: true }).fill('120');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => card.getByRole('status').textContent()).toBe('Saved.');
    expect(await storedLimits('shared-limits')).toEqual([[120, 30]]);
    expect(await card.getByText(/^Now:/).textContent()).toContain(
      'Now: 120/min · 30/min per user.',
    );
    await expect.poll(() => limitsCell(page, 'shared-limits')).toBe('120/min · 30/min per user');
    // saved again with nothing changed: nothing to send, and "Saved." stays (the click's own
    // clearing of the notice must not take the one the same click set again)
    await card.getByRole('button', { name: 'Save limits' }).click();
    await page.waitForTimeout(500);
    expect(await card.getByRole('status').textContent()).toBe('Saved.');
    expect(patches).toHaveLength(1);
    expect(await storedLimits('shared-limits')).toEqual([[120, 30]]);
    await close();
  });
});

describe('who may change a key’s limits', () => {
  for (const role of ['viewer', 'member'] as const) {
    it(`a ${role} sees the limits and no edit action`, async () => {
      await issueKey(`seen-by-${role}`, { requests_per_minute: 120 });
      const { page, close } = await openWindow(browser);
      await signedIn(page, emails[role], `/keys/${org.app_connection_id}`);
      await expect.poll(() => limitsCell(page, `seen-by-${role}`)).toBe('120/min');
      expect(await page.getByRole('button', { name: /^Edit limits/ }).count()).toBe(0);
      expect(await page.getByLabel('Requests per minute', { exact: true }).count()).toBe(0);
      await close();
    });
  }

  it('an OAuth connection’s token has its limits to edit (no rotation, which the API refuses), and the connection no key form: a note says where its token comes from', async () => {
    const client = await api.post<{ client_id: string; redirect_uris: string[] }>(
      `/dashboard/api/apps/${org.app_id}/oauth-clients`,
      { name: 'Phone app', redirect_uris: ['http://127.0.0.1:9/cb'], public: true },
    );
    expect(client.status).toBe(201);
    const token = await connectAndExchange(gateway.url, api, client.body, { orgId: org.org_id });
    const { page, close } = await openWindow(browser);
    const posts = requestsSent(page, 'POST', /\/api-keys$/);
    await signedIn(page, emails.admin, `/keys/${token.app_connection_id}`);
    const hint = token.access_token.slice(0, 10);
    await expect.poll(() => limitsCell(page, hint)).toBe('unlimited');
    const row = dataRows(page).filter({ hasText: hint });
    // its limits' Edit, and Revoke: no Rotate
    await expect.poll(() => row.getByRole('button').allTextContents()).toEqual(['Edit', 'Revoke…']);
    const card = await openLimitsCard(page, row, 'OAuth token');
    await card.getByLabel('Per product user, requests per minute').fill('12');
    await card.getByRole('button', { name: 'Save limits' }).click();
    await page
      .getByRole('dialog', { name: 'Lower the rate limits of OAuth token?' })
      .getByRole('button', { name: 'Lower limits' })
      .click();
    await expect.poll(() => limitsCell(page, hint)).toBe('unlimited · 12/min per user');
    const { rows: limits } = await db.query(
      `SELECT requests_per_minute AS rpm, product_user_requests_per_minute AS user_rpm
         FROM api_keys WHERE app_connection_id = $1`,
      [token.app_connection_id],
    );
    expect(limits).toEqual([{ rpm: null, user_rpm: 12 }]);
    await card.getByRole('button', { name: 'Close' }).click();

    // no form to issue a key the API would refuse (409): a note instead, for an admin too
    expect(await page.getByRole('form', { name: 'Issue an API key' }).count()).toBe(0);
    expect(await page.getByLabel('Key name (optional)').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Issue key' }).count()).toBe(0);
    const note = page.getByRole('note');
    expect(await note.textContent()).toBe(
      'This connection was made through OAuth: its token is issued by OAuth when someone connects the app, and no API keys are issued on it. To cut the app off, revoke its token below, or the app on the Connected apps page.',
    );
    expect(await page.getByText('Issue one above').count()).toBe(0);
    await screenshot(page, 'key-limits-09-oauth-connection');
    // the API would have refused the key; the page asked for none, and the connection holds
    // its token only
    const refused = await api.post<ErrorBody>(
      `/dashboard/api/connections/${token.app_connection_id}/api-keys`,
      { name: 'not-issued' },
    );
    expect([refused.status, refused.body.error.code]).toEqual([409, 'gw_conflict']);
    expect(posts).toEqual([]);
    const { rows } = await db.query<{ kind: string; name: string | null }>(
      'SELECT kind, name FROM api_keys WHERE app_connection_id = $1',
      [token.app_connection_id],
    );
    expect(rows).toEqual([{ kind: 'oauth_token', name: 'OAuth token' }]);

    // its link opens the connected apps page, where the app can be revoked
    await note.getByRole('link', { name: 'Connected apps' }).click();
    await page.getByRole('heading', { level: 1, name: 'Connected apps' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/orgs/${org.org_id}/connected-apps`);

    // an API-key connection keeps its form, and no note
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/${org.app_connection_id}`);
    await page.getByRole('form', { name: 'Issue an API key' }).waitFor();
    expect(await page.getByRole('note').count()).toBe(0);
    await close();
  });
});

describe('a connected app’s rate limits on the Connected apps page', () => {
  it('shows each app’s limits; an admin changes them there (a stricter one asks first), and the gateway applies them to the app’s token; a viewer only sees them', async () => {
    // an app of its own, so that its row is the only one with its name
    const app = await api.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/apps`, {
      name: 'Hammering app',
    });
    expect(app.status).toBe(201);
    const client = await api.post<{ client_id: string; redirect_uris: string[] }>(
      `/dashboard/api/apps/${app.body.id}/oauth-clients`,
      { name: 'Hammer', redirect_uris: ['http://127.0.0.1:9/cb'], public: true },
    );
    expect(client.status).toBe(201);
    const token = await connectAndExchange(gateway.url, api, client.body, { orgId: org.org_id });
    const { page, close } = await openWindow(browser);
    const patches = requestsSent(page, 'PATCH', /\/api-keys\/[^/]+$/);
    await signedIn(page, emails.admin, '/connected-apps');
    const appRow = dataRows(page).filter({ hasText: 'Hammering app' });
    const cell = async () => {
      await appRow.waitFor();
      const headers = await page.getByRole('columnheader').allTextContents();
      const column = headers.indexOf('Rate limits');
      expect(column).toBeGreaterThan(-1);
      return appRow.getByRole('cell').nth(column).locator('.limits-cell > span').textContent();
    };
    await expect.poll(cell).toBe('unlimited');

    const card = await openLimitsCard(page, appRow, 'Hammering app');
    // the words are the app's
    expect(await card.getByText(/^Now:/).textContent()).toBe(
      'Now: unlimited. A change applies to the app’s next request on every gateway instance.',
    );
    expect(await card.locator('#edit-key-rpm-hint').textContent()).toBe(
      'Bursts of up to this many requests by the app, then this many a minute; more are refused (429). Empty: unlimited.',
    );
    await card.getByLabel('Requests per minute', { exact: true }).fill('1');
    await card.getByRole('button', { name: 'Save limits' }).click();
    const dialog = page.getByRole('dialog', { name: 'Lower the rate limits of Hammering app?' });
    await dialog.waitFor();
    expect(await dialog.locator('.facts').innerText()).toMatch(
      /Requests per minute\s+unlimited → 1\/min/,
    );
    await screenshotOf(dialog, 'key-limits-10-connected-app-confirm');
    await dialog.getByRole('button', { name: 'Lower limits' }).click();
    await expect.poll(cell).toBe('1/min');
    expect(await card.getByRole('status').textContent()).toBe('Saved.');
    expect(patches).toHaveLength(1);
    const { rows } = await db.query(
      `SELECT kind, requests_per_minute AS rpm, product_user_requests_per_minute AS user_rpm
         FROM api_keys WHERE app_connection_id = $1`,
      [token.app_connection_id],
    );
    expect(rows).toEqual([{ kind: 'oauth_token', rpm: 1, user_rpm: null }]);
    const infer = () =>
      postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, bearer(token.access_token));
    expect((await infer()).status).toBe(200);
    const refused = await infer();
    expect([refused.status, refused.body.error?.code]).toEqual([429, 'gw_rate_limited']);
    await screenshot(page, 'key-limits-11-connected-apps');
    await card.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => focusedButton(page)).toBe('Edit limits of Hammering app');
    await close();

    // a viewer sees the limits, and nothing to change them with
    const viewer = await openWindow(browser);
    await signedIn(viewer.page, emails.viewer, '/connected-apps');
    const viewerRow = dataRows(viewer.page).filter({ hasText: 'Hammering app' });
    await viewerRow.waitFor();
    expect(await viewerRow.locator('.limits-cell').textContent()).toBe('1/min');
    expect(await viewer.page.getByRole('button', { name: /^Edit limits/ }).count()).toBe(0);
    await viewer.close();
  });
});

describe('the keys page on a 375 px phone', () => {
  it('shows the limits and the edit card without the page scrolling sideways', async () => {
    await issueKey('phone-app', {
      requests_per_minute: 1_000_000,
      product_user_requests_per_minute: 999_999,
    });
    const { page, close } = await openWindow(browser, { width: 375, height: 812 });
    await signedIn(page, emails.admin, `/keys/${org.app_connection_id}`);
    await expect
      .poll(() => limitsCell(page, 'phone-app'))
      .toBe('1,000,000/min · 999,999/min per user');
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'key-limits-05-keys-375');
    // the table scrolls sideways in its own box, as every list does on a phone
    await page.evaluate(`(() => {
      const wrap = document.querySelector('.table-wrap');
      const header = [...wrap.querySelectorAll('th')].find((th) => th.textContent === 'Rate limits');
      wrap.scrollLeft = header.offsetLeft;
    })()`);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(page.locator('.table-wrap'), 'key-limits-06-keys-375-scrolled');
    const card = await openLimitsCard(page, page.locator('body'), 'phone-app');
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(card, 'key-limits-07-edit-375');
    await card.getByLabel('Requests per minute', { exact: true }).fill('100');
    await card.getByRole('button', { name: 'Save limits' }).click();
    const dialog = page.getByRole('dialog', { name: 'Lower the rate limits of phone-app?' });
    await dialog.waitFor();
    const box = (await dialog.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(dialog, 'key-limits-08-confirm-375');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await close();
  });
});
