// What a dashboard user meets around money, key policies and long ids, in a real browser
// (chromium) against a live gateway on the real Redis and Postgres: credits granted to a
// product user only after a confirmation that names the amount, currency, user and expiry
// (cancelled: nothing sent, nothing granted), its button in the primary colour (it adds; a
// block's stays red); the warnings the API answers for a key whose policy names a model the
// catalogue lacks (the key issued all the same); ids in page headers that break at their
// separators on a 375 px phone, the page never wider than the screen; and an address naming no
// connection, however long or odd, said as such.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFIRM_COLOURS,
  confirmButtonColour,
  openWindow,
  screenshot,
  requestsSent,
  screenshotOf,
  sidewaysOverflow,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson } from './support/http.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('dashboard-ui-grants-ids');
const email = uniqueEmail('grants-admin');
/** An external id as a product might build one: 250 characters, in pieces a line can hold. */
const LONG_EXTERNAL_ID = [
  'eu-west-1.acme-corporation:tenant_0000482913',
  'team_platform-engineering',
  'member_jane.doe+billing@example.com',
  'session_7f3a9c2e-44c2-9e07',
  'device_a81b.mobile-ios:17.4.1',
  'workspace_billing-and-invoicing',
  'region_eu-central-1',
].join('/');
/** A name without a space, as long as the API takes (200 characters). */
const LONG_NAME =
  'customer-support-assistant.internal-pilot_eu-central-1_platform-engineering-team_billing-and-invoicing_'
    .repeat(2)
    .slice(0, 200);
/** Where an id may break: after these, or before those (IdText in web/dashboard/src/ui.tsx). */
const BREAKS_AFTER = '/_:?&#=,|-';
const BREAKS_BEFORE = '.@+~';
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let api: DashboardClient;
let longUserId: string;
let longAppId: string;
let longConnectionId: string;

/** `page` signed in (a session of the file's: these tests are about pages), at `path`. */
const signedIn = (page: Page, path: string): Promise<void> =>
  ui.visit(page, email, `/dashboard/orgs/${org.org_id}${path}`);

/** A product user of the seeded app, made by a request that names them; their id. */
async function productUser(externalUserId: string): Promise<string> {
  const answer = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    { ...bearer(org.api_key), 'x-gw-external-user-id': externalUserId },
  );
  expect(answer.status).toBe(200);
  await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = $2',
    [org.org_id, externalUserId],
  );
  return rows[0]!.id;
}

/** The grants Postgres holds for a product user. */
const grantRows = async (productUserId: string) =>
  (
    await db.query<{ amount: string; currency: string; expires_at: Date | null; reason: string }>(
      'SELECT amount::text, currency, expires_at, reason FROM credit_grants WHERE product_user_id = $1',
      [productUserId],
    )
  ).rows;

/**
 * The text of an element as the browser lays it out, one string per line (the characters of
 * its text nodes grouped by the line box each sits on).
 */
async function renderedLines(element: Locator): Promise<string[]> {
  // the function is defined in the page (its window, not this process) by source: this
  // file's types have no DOM
  await element.page().evaluate(`window.renderedLines = (element) => {
    const lines = [];
    let top = null;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let index = 0; index < node.data.length; index += 1) {
        const range = document.createRange();
        range.setStart(node, index);
        range.setEnd(node, index + 1);
        const box = range.getClientRects()[0];
        if (!box) continue;
        if (top === null || box.top > top + 2) {
          lines.push('');
          top = box.top;
        }
        lines[lines.length - 1] += node.data[index];
      }
    }
    return lines;
  }`);
  return element.evaluate((target) =>
    (globalThis as unknown as { renderedLines(node: unknown): string[] }).renderedLines(target),
  );
}

/** Where a laid-out id breaks that is not at one of its separators (none: it reads well). */
function breaksInsidePieces(lines: readonly string[]): string[] {
  const bad: string[] = [];
  for (let index = 1; index < lines.length; index += 1) {
    const before = lines[index - 1]!;
    const after = lines[index]!;
    if (!BREAKS_AFTER.includes(before.at(-1)!) && !BREAKS_BEFORE.includes(after[0]!)) {
      bad.push(`${before.slice(-8)}|${after.slice(0, 8)}`);
    }
  }
  return bad;
}

beforeAll(async () => {
  ui = await browserSuite(env, { seed: ['--name', 'Grants Co'], users: { [email]: 'admin' } });
  ({ gateway, browser, org } = ui);
  api = await ui.client(email);
  longUserId = await productUser(LONG_EXTERNAL_ID);
  const app = await api.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/apps`, {
    name: LONG_NAME,
  });
  expect(app.status).toBe(201);
  longAppId = app.body.id;
  const connection = await api.post<{ id: string }>(
    `/dashboard/api/apps/${longAppId}/connections`,
    { name: LONG_NAME },
  );
  expect(connection.status).toBe(201);
  longConnectionId = connection.body.id;
});

afterAll(() => ui?.close());

describe('granting credits asks first', () => {
  it('shows the amount, currency, user, app and expiry before granting; cancelling sends nothing and grants nothing', async () => {
    const userId = await productUser('dana-7');
    const { page, close } = await openWindow(browser);
    const grantPosts = requestsSent(page, 'POST', /\/credit-grants$/);
    await signedIn(page, `/users/${userId}`);
    const form = page.getByRole('form', { name: 'Grant credits' });
    const credits = page.getByRole('region', { name: 'Credits' });
    await expect.poll(() => credits.textContent()).toContain('Available0.00 USD');

    // a past expiry and a currency that is no code: said in the form, no dialog
    await form.getByLabel('Amount').fill('5.25');
    await form.getByLabel('Expires').fill('2020-01-01T09:00');
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('in the past');
    await form.getByLabel('Expires').fill('');
    await form.getByLabel('Currency').fill('U$');
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toBe('Enter the currency as its three-letter code, like USD.');
    expect(await page.getByRole('dialog').count()).toBe(0);

    // EUR, expiring at a set time, with a reason: all of it in the dialog
    const expiry = new Date(Date.now() + 10 * 86_400_000);
    const pad = (value: number) => String(value).padStart(2, '0');
    const localExpiry = `${expiry.getFullYear()}-${pad(expiry.getMonth() + 1)}-${pad(expiry.getDate())}T${pad(expiry.getHours())}:${pad(expiry.getMinutes())}`;
    await form.getByLabel('Currency').fill('eur');
    await form.getByLabel('Expires').fill(localExpiry);
    await form.getByLabel('Reason (optional)').fill('sorry for the outage');
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Grant 5.25 EUR of credits?' });
    await dialog.waitFor();
    const facts = await dialog.locator('.facts').innerText();
    expect(facts).toContain('dana-7');
    expect(facts).toContain('Seeded app');
    expect(facts).toContain('5.25 EUR');
    expect(facts).toContain('sorry for the outage');
    const shownExpiry = await page.evaluate<string>(
      `new Date(${JSON.stringify(new Date(localExpiry).toISOString())}).toLocaleString()`,
    );
    expect(facts).toMatch(
      new RegExp(`Expires\\s+${shownExpiry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    expect(await dialog.textContent()).toContain(
      'Credits in EUR pay only for costs in EUR; this user’s requests are charged in USD.',
    );
    // granting adds: its button is the primary one, not a red one
    expect(await confirmButtonColour(dialog)).toBe(CONFIRM_COLOURS.constructive);
    await screenshotOf(dialog, 'grants-01-confirm-eur');

    // cancelled: the dialog closes, nothing was sent, nothing is granted
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    // and with Escape, the dialog's other way out
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(grantPosts).toEqual([]);
    expect(await grantRows(userId)).toEqual([]);
    const listed = await api.get<{ data: unknown[] }>(
      `/dashboard/api/product-users/${userId}/credit-grants`,
    );
    expect(listed.body.data).toEqual([]);
    await expect.poll(() => page.getByText('No credits granted yet.').count()).toBe(1);

    // confirmed in USD, without an expiry: granted once, as shown
    await form.getByLabel('Currency').fill('USD');
    await form.getByLabel('Expires').fill('');
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    const usd = page.getByRole('dialog', { name: 'Grant 5.25 USD of credits?' });
    expect(await usd.locator('.facts').innerText()).toMatch(/Expires\s+never/);
    expect(await usd.getByText('Credits in').count()).toBe(0);
    await usd.getByRole('button', { name: 'Grant 5.25 USD' }).click();
    await page.getByText('Granted 5.25 USD. Available credits now 5.25 USD.').waitFor();
    await expect.poll(() => credits.textContent()).toContain('Available5.25 USD');
    expect(grantPosts).toHaveLength(1);
    expect(await grantRows(userId)).toEqual([
      {
        amount: '5.250000000000',
        currency: 'USD',
        expires_at: null,
        reason: 'sorry for the outage',
      },
    ]);
    await screenshot(page, 'grants-02-granted');
    await close();
  });

  it('names a long external id in the dialog without widening a phone’s screen, and grants at the time it shows', async () => {
    const { page, close } = await openWindow(browser, { width: 375, height: 812 });
    await signedIn(page, `/users/${longUserId}`);
    const form = page.getByRole('form', { name: 'Grant credits' });
    const expiry = new Date(Date.now() + 3 * 86_400_000);
    expiry.setSeconds(0, 0);
    const pad = (value: number) => String(value).padStart(2, '0');
    await form.getByLabel('Amount').fill('0.5');
    await form
      .getByLabel('Expires')
      .fill(
        `${expiry.getFullYear()}-${pad(expiry.getMonth() + 1)}-${pad(expiry.getDate())}T${pad(expiry.getHours())}:${pad(expiry.getMinutes())}`,
      );
    await form.getByRole('button', { name: 'Grant credits…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Grant 0.50 USD of credits?' });
    await dialog.waitFor();
    const id = dialog.locator('code.id');
    expect(await id.textContent()).toBe(LONG_EXTERNAL_ID);
    expect(breaksInsidePieces(await renderedLines(id))).toEqual([]);
    // the dialog's right edge inside the screen
    const box = (await dialog.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(dialog, 'grants-03-confirm-375');
    await dialog.getByRole('button', { name: 'Grant 0.50 USD' }).click();
    await page.getByText('Granted 0.50 USD.').waitFor();
    const rows = await grantRows(longUserId);
    expect(rows.map((row) => [row.amount, row.expires_at?.toISOString()])).toEqual([
      ['0.500000000000', expiry.toISOString()],
    ]);
    await close();
  });
});

describe('a key’s model policy', () => {
  it('issues a key whose policy names a model the catalogue lacks, and shows the API’s warning with the key', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, `/keys/${org.app_connection_id}`);
    const policy = page.getByLabel('Allowed models (optional)');

    // a pattern that can never match: refused, nothing issued
    await page.getByLabel('Key name (optional)').fill('typo');
    await policy.fill('gpt-4o');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('names no provider');
    const keysNamed = async (name: string) =>
      (
        await db.query<{ model_policy: string[]; status: string }>(
          'SELECT model_policy, status FROM api_keys WHERE app_connection_id = $1 AND name = $2',
          [org.app_connection_id, name],
        )
      ).rows;
    expect(await keysNamed('typo')).toEqual([]);

    // the field's own example names models the catalogue has: issued, no warning
    await page.getByLabel('Key name (optional)').fill('known');
    await policy.fill((await policy.getAttribute('placeholder'))!);
    await page.getByRole('button', { name: 'Issue key' }).click();
    let shownOnce = page.getByRole('region', { name: 'Your new API key “known”' });
    await shownOnce.waitFor();
    expect(await shownOnce.getByText('Issued, with').count()).toBe(0);
    expect(await keysNamed('known')).toEqual([
      { model_policy: ['vendor_b/*', 'vendor_a/claude-sonnet-4-5'], status: 'active' },
    ]);
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();

    // a model id the catalogue does not list (yet): issued, and the warning says which
    await page.getByLabel('Key name (optional)').fill('early');
    await policy.fill('vendor_b/*, vendor_a/claude-next-preview');
    await page.getByRole('button', { name: 'Issue key' }).click();
    shownOnce = page.getByRole('region', { name: 'Your new API key “early”' });
    await shownOnce.waitFor();
    expect(await shownOnce.getByLabel('New key').inputValue()).toMatch(/^gw_\w{20,}$/);
    const warning = shownOnce.locator('.warning[role="status"]');
    expect(await warning.innerText()).toContain(
      'Issued, with a warning about its allowed models:\n',
    );
    expect(await warning.getByRole('listitem').allTextContents()).toEqual([
      'vendor_a/claude-next-preview is not in the model catalogue (yet): the key serves it once it is added',
    ]);
    // not an error: the page shows none, and the key is in the list and in Postgres
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await keysNamed('early')).toEqual([
      { model_policy: ['vendor_b/*', 'vendor_a/claude-next-preview'], status: 'active' },
    ]);
    const row = page.getByRole('region', { name: /^Keys of/ }).getByRole('row', { name: /early/ });
    await expect.poll(() => row.textContent()).toContain('vendor_a/claude-next-preview');
    await screenshot(page, 'grants-04-key-policy-warning');

    // dismissed with the key: gone
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();
    await page.getByText('Issued, with a warning').waitFor({ state: 'detached' });
    await close();
  });
});

describe('long ids on a 375 px phone', () => {
  it('breaks a product user’s external id at its separators, in the heading and the header’s code, and nothing scrolls sideways', async () => {
    const { page, close } = await openWindow(browser, { width: 375, height: 812 });
    await signedIn(page, `/users/${longUserId}`);
    const heading = page.getByRole('heading', { level: 1 });
    await expect.poll(() => heading.textContent()).toBe(LONG_EXTERNAL_ID);
    expect(await sidewaysOverflow(page)).toBe(0);
    const headingLines = await renderedLines(heading);
    expect(headingLines.length).toBeGreaterThan(3);
    expect(breaksInsidePieces(headingLines)).toEqual([]);
    const code = page.locator('.page-header code.id').first();
    expect(await code.textContent()).toBe(LONG_EXTERNAL_ID);
    expect(breaksInsidePieces(await renderedLines(code))).toEqual([]);
    // copied whole: the break points are not characters
    expect(await heading.innerText()).toBe(LONG_EXTERNAL_ID);
    await screenshotOf(page.locator('header.page-header'), 'ids-01-user-header-375');

    // the block confirmation names them too
    await page.getByRole('button', { name: 'Block…' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.getByRole('heading').textContent())
      .toBe(`Block ${LONG_EXTERNAL_ID}?`);
    // blocking takes something away: red
    expect(await confirmButtonColour(dialog)).toBe(CONFIRM_COLOURS.destructive);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshotOf(dialog, 'ids-02-block-375');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await close();
  });

  it('fits the app, API-key and not-found pages of long names and ids on the screen', async () => {
    const { page, close } = await openWindow(browser, { width: 375, height: 812 });
    await signedIn(page, `/apps/${longAppId}`);
    await page.getByRole('heading', { level: 1, name: LONG_NAME }).waitFor();
    await page.getByRole('heading', { level: 3, name: LONG_NAME }).waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'ids-03-app-375');

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/${longConnectionId}`);
    const heading = page.getByRole('heading', { level: 2, name: /^Keys of/ });
    await heading.waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'ids-04-keys-375');

    // ids that name nothing, as long as a path takes them
    const unknown = `app_${'unknown-app-id_'.repeat(8)}end`;
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/apps/${unknown}`);
    await page.getByRole('heading', { level: 1, name: 'No such app' }).waitFor();
    const id = page.locator('.page-header code.id');
    expect(await id.textContent()).toBe(unknown);
    expect(breaksInsidePieces(await renderedLines(id))).toEqual([]);
    expect(await sidewaysOverflow(page)).toBe(0);
    // the page starts under the navigation, not half a screen below it
    const main = (await page.locator('main').boundingBox())!;
    const nav = (await page.getByRole('navigation', { name: 'Dashboard' }).boundingBox())!;
    expect(main.y - (nav.y + nav.height)).toBeLessThan(2);
    await screenshot(page, 'ids-05-no-such-app-375');

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/conn_${'x-'.repeat(29)}`);
    await page.getByText('This organization has no connection').waitFor();
    expect(await sidewaysOverflow(page)).toBe(0);
    await close();
  });

  it('says "no such connection" for a keys address whose id is longer than an id can be, or of characters no id has, as for an unknown one', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, `/keys/${org.app_connection_id}`);
    await page.getByRole('heading', { name: /^Keys of/ }).waitFor();
    const lookups: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).searchParams.has('ids')) lookups.push(request.url());
    });
    for (const [what, id] of [
      ['65 characters', `conn_${'x'.repeat(60)}`],
      ['far too long', `conn_${'unknown-connection-id_'.repeat(12)}end`],
      ['a dot', 'conn_abc.def'],
      ['unknown, of the right form', `conn_${'x'.repeat(59)}`],
    ] as const) {
      await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/${encodeURIComponent(id)}`);
      const alert = page.getByRole('alert');
      await expect
        .poll(() => alert.allTextContents(), { message: what })
        .toEqual([`This organization has no connection ${id}.`]);
      // nothing of the API's validation, no key form, no list
      expect(await page.getByText('letters, digits').count(), what).toBe(0);
      expect(await page.getByRole('form', { name: 'Issue an API key' }).count(), what).toBe(0);
      expect(await page.getByRole('heading', { name: /^Keys of/ }).count(), what).toBe(0);
      expect(await sidewaysOverflow(page), what).toBe(0);
    }
    await screenshot(page, 'ids-06-no-such-connection');
    // only the id that could name one was looked up
    expect(lookups.map((url) => new URL(url).searchParams.get('ids'))).toEqual([
      `conn_${'x'.repeat(59)}`,
    ]);
    await close();
  });
});
