// The dashboard of an organization with more apps and connections than one page of a list
// (200): 250 apps and 230 connections on one of them, inserted by SQL, beside the seeded app
// and its connection, which come last. The API counts them and finds any connection by name
// or id (decision 300); in a real browser (chromium) against a live gateway the overview shows
// the exact counts, and the API keys, caps, provider credentials and usage pages reach and
// name a connection past the first page. Every window fails its test if the page threw.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dataRows,
  openWindow,
  screenshot,
  screenshotOf,
  sidewaysOverflow,
  statValue,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { seed, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('dashboard-ui-big-org');
const emails = { admin: uniqueEmail('big-admin'), viewer: uniqueEmail('big-viewer') };
const FILLER_APPS = 250;
/** Connections of the first filler app; every tenth is revoked. */
const LANES = 230;
const REVOKED = LANES / 10;
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let other: SeededOrg;
let admin: DashboardClient;
let viewer: DashboardClient;
let filler: string;

interface OrgConnection {
  id: string;
  org_id: string;
  app_id: string;
  app_name: string;
  name: string;
  status: 'active' | 'revoked';
}
type Page200 = { data: OrgConnection[]; next_cursor: string | null };

const lane = (i: number): string => `conn_fill${filler}${String(i).padStart(4, '0')}`;
const connections = (orgId: string, query = '') =>
  `/dashboard/api/orgs/${orgId}/connections${query}`;

/** `page` signed in as the admin (a session of the file's: these tests are about pages). */
const signedIn = (page: Page, path: string): Promise<void> =>
  ui.visit(page, emails.admin, `/dashboard/orgs/${org.org_id}${path}`);

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Big Co', '--wallet', '100.00'],
    users: { [emails.admin]: 'admin', [emails.viewer]: 'viewer' },
  });
  ({ gateway, browser, org } = ui);
  other = await seed(env, ['--name', 'Other Co']);
  admin = await ui.client(emails.admin);
  viewer = await ui.client(emails.viewer);

  // 250 apps older than the seeded one; the first has 230 connections, every tenth revoked;
  // and a deleted app with a (revoked) connection, which nothing counts or lists
  filler = Math.random().toString(36).slice(2, 10);
  await db.query(
    `INSERT INTO apps (id, org_id, name, created_at)
     SELECT 'app_fill' || $2 || lpad(i::text, 4, '0'), $1, 'Filler app ' || lpad(i::text, 3, '0'),
            now() - interval '2 days' + i * interval '1 second'
       FROM generate_series(1, $3::int) AS i`,
    [org.org_id, filler, FILLER_APPS],
  );
  await db.query(
    `INSERT INTO app_connections (id, org_id, app_id, name, status, created_at)
     SELECT 'conn_fill' || $2 || lpad(i::text, 4, '0'), $1, 'app_fill' || $2 || '0001',
            'Lane ' || lpad(i::text, 3, '0'), CASE WHEN i % 10 = 0 THEN 'revoked' ELSE 'active' END,
            now() - interval '1 day' + i * interval '1 second'
       FROM generate_series(1, $3::int) AS i`,
    [org.org_id, filler, LANES],
  );
  await db.query(
    `WITH gone AS (
       INSERT INTO apps (id, org_id, name, status, deleted_at, created_at)
       VALUES ('app_gone' || $2, $1, 'Gone app', 'deleted', now(), now() - interval '3 days')
       RETURNING id)
     INSERT INTO app_connections (id, org_id, app_id, name, status)
     SELECT 'conn_gone' || $2, $1, id, 'Gone lane', 'revoked' FROM gone`,
    [org.org_id, filler],
  );
  // usage of the seeded connection (the last of the list), for the usage page
  const answer = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    bearer(org.api_key),
  );
  expect(answer.status).toBe(200);
  await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
});

afterAll(() => ui?.close());

describe('the API, for more than 200 apps and connections', () => {
  it('counts every app and connection in the overview', async () => {
    const overview = await viewer.get<{ counts: Record<string, number> }>(
      `/dashboard/api/orgs/${org.org_id}/overview`,
    );
    expect(overview.status).toBe(200);
    expect(overview.body.counts).toEqual({
      apps: FILLER_APPS + 1,
      active_connections: LANES - REVOKED + 1,
      revoked_connections: REVOKED,
    });
    // the app list agrees, page by page
    let apps = 0;
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: unknown[]; next_cursor: string | null } } =
        await viewer.get(
          `/dashboard/api/orgs/${org.org_id}/apps?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
        );
      apps += page.body.data.length;
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(apps).toBe(FILLER_APPS + 1);
  });

  it('lists every connection of the organization in pages, oldest first, with its app’s name', async () => {
    const rows: OrgConnection[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: Page200 } = await viewer.get(
        connections(org.org_id, `?limit=200${cursor ? `&cursor=${cursor}` : ''}`),
      );
      expect(page.status).toBe(200);
      rows.push(...page.body.data);
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(2);
    expect(rows.map((row) => row.id)).toEqual([
      ...Array.from({ length: LANES }, (_, i) => lane(i + 1)),
      org.app_connection_id,
    ]);
    expect(rows[0]).toMatchObject({
      org_id: org.org_id,
      app_id: `app_fill${filler}0001`,
      app_name: 'Filler app 001',
      name: 'Lane 001',
      status: 'active',
    });
    expect(rows.at(-1)).toMatchObject({
      app_id: org.app_id,
      app_name: 'Seeded app',
      name: 'Seeded connection',
    });
    expect(rows.filter((row) => row.status === 'revoked')).toHaveLength(REVOKED);
  });

  it('finds connections by the start of their name or their app’s (any case), by status, and by ids', async () => {
    const found = async (query: string): Promise<string[]> => {
      const answer = await viewer.get<Page200>(connections(org.org_id, query));
      expect(answer.status, query).toBe(200);
      return answer.body.data.map((row) => row.name);
    };
    expect(await found('?q=lane%2001&limit=200')).toEqual(
      Array.from({ length: 10 }, (_, i) => `Lane 01${i}`),
    );
    expect(await found('?q=SEEDED')).toEqual(['Seeded connection']);
    expect(await found('?q=filler%20app%20001&limit=5')).toEqual([
      'Lane 001',
      'Lane 002',
      'Lane 003',
      'Lane 004',
      'Lane 005',
    ]);
    expect(await found('?q=%25')).toEqual([]); // LIKE's wildcards are matched as themselves
    // Both sides fold case the same way (Postgres's), also for letters JavaScript folds otherwise.
    await db.query(
      `INSERT INTO app_connections (id, org_id, app_id, name, status)
       VALUES ('conn_istanbul' || $2, $1, $3, 'İstanbul', 'revoked')`,
      [org.org_id, filler, org.app_id],
    );
    for (const q of ['%C4%B0s', 'is', 'IST']) {
      expect(await found(`?q=${q}`), q).toEqual(['İstanbul']);
    }
    await db.query(`DELETE FROM app_connections WHERE id = 'conn_istanbul' || $1`, [filler]);
    expect(await found('?q=gone')).toEqual([]); // a deleted app's connections are not listed
    expect(await found('?status=revoked&limit=200')).toHaveLength(REVOKED);
    expect(await found('?status=active&q=lane%2002')).toEqual(
      Array.from({ length: 9 }, (_, i) => `Lane 02${i + 1}`),
    );
    // ids: only this organization's connections come back (another's, and unknown ids, do not)
    const ids = [org.app_connection_id, lane(215), other.app_connection_id, 'conn_missing'];
    const byIds = await viewer.get<Page200>(connections(org.org_id, `?ids=${ids.join(',')}`));
    expect(byIds.body.data.map((row) => row.id)).toEqual([lane(215), org.app_connection_id]);
    expect(byIds.body.next_cursor).toBeNull();
  });

  it('refuses another organization (404) and queries it cannot read (400)', async () => {
    for (const orgId of [other.org_id, 'org_000000000000000000000']) {
      const answer = await admin.get<ErrorBody>(connections(orgId));
      expect(answer.status, orgId).toBe(404);
      expect(answer.body.error.code).toBe('gw_not_found');
    }
    const tooMany = Array.from({ length: 201 }, (_, i) => `conn_${i}`).join(',');
    const refused: Record<string, string> = {
      [`?ids=${tooMany}`]: 'ids: must name at most 200 connections',
      '?ids=conn%20one': 'ids: each connection id is 1 to 64 letters, digits, _ or -',
      [`?ids=${'c'.repeat(65)}`]: 'ids: each connection id is 1 to 64 letters, digits, _ or -',
      '?ids=a,,b': 'ids: must be connection ids separated by commas, with none empty',
      '?ids=,': 'ids: must be connection ids separated by commas, with none empty',
      '?status=deleted': 'status:',
      '?limit=201': 'limit: must be at most 200',
      // digits only: not what Number() reads as 100, 16 or 5 (decision 303)
      '?limit=1e2': 'limit: must be a whole number, written with digits only',
      '?limit=0x10': 'limit: must be a whole number, written with digits only',
      '?limit=%205': 'limit: must be a whole number, written with digits only',
      '?limit=5.0': 'limit: must be a whole number, written with digits only',
      '?q=a&q=b': 'query parameter "q": given twice',
      '?sort=name': 'query parameter "sort": not one this route takes (limit, cursor,',
    };
    for (const [query, message] of Object.entries(refused)) {
      const answer = await viewer.get<ErrorBody>(connections(org.org_id, query));
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.code).toBe('gw_invalid_request');
      expect(answer.body.error.message, query).toContain(message);
    }
    const anonymous = await fetch(`${gateway.url}${connections(org.org_id)}`);
    expect(anonymous.status).toBe(401);
  });
});

describe('the pages, for more than 200 apps and connections', () => {
  it('shows the exact counts on the overview', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, '');
    await expect.poll(() => statValue(page, /^Apps$/)).toBe((FILLER_APPS + 1).toLocaleString());
    await expect
      .poll(() => statValue(page, /^Active connections/))
      .toBe(String(LANES - REVOKED + 1));
    await expect
      .poll(() => page.locator('.stat-label', { hasText: /^Active connections/ }).textContent())
      .toBe(`Active connections (${REVOKED} revoked)`);
    await screenshot(page, 'big-org-01-overview');
    await close();
  });

  it('opens the keys of a connection past the first page, by its path and by searching', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, '/keys');
    // without a connection in the path: the first active one
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/dashboard/orgs/${org.org_id}/keys/${lane(1)}`);
    await page.getByRole('heading', { name: 'Keys of Filler app 001 › Lane 001' }).waitFor();
    const select = page.getByRole('combobox', { name: 'Connection' });
    // the heading names the connection before the select's list of connections is loaded
    await expect.poll(() => select.locator('option').count()).toBe(200);
    await page.getByText('The first 200 connections').waitFor();

    const search = page.getByRole('searchbox', { name: 'Find a connection by name' });
    await search.fill('seeded');
    // labelled on the page, not only for screen readers
    expect(await page.getByText('Find a connection by name', { exact: true }).isVisible()).toBe(
      true,
    );
    await expect
      .poll(() => select.locator('option').allTextContents())
      .toContain('Seeded app › Seeded connection');
    await select.selectOption(org.app_connection_id);
    await page.getByRole('heading', { name: 'Keys of Seeded app › Seeded connection' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(
      `/dashboard/orgs/${org.org_id}/keys/${org.app_connection_id}`,
    );
    await page.getByRole('row').filter({ hasText: 'gw_' }).first().waitFor();
    await screenshot(page, 'big-org-02-keys-searched');

    // a deep link to a connection past the first page, and one of another organization
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/${lane(215)}`);
    await page.getByRole('heading', { name: 'Keys of Filler app 001 › Lane 215' }).waitFor();
    await expect.poll(() => select.inputValue()).toBe(lane(215));
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/keys/${other.app_connection_id}`);
    await page
      .getByText(`This organization has no connection ${other.app_connection_id}`)
      .waitFor();
    await close();
  });

  it('sets the cap of a connection found by name, past the first page', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, '/caps');
    const select = page.getByRole('combobox', { name: 'Connection' });
    await expect.poll(() => select.inputValue()).toBe(lane(1));
    await page.getByRole('searchbox', { name: 'Find a connection by name' }).fill('Lane 22');
    await expect.poll(() => select.locator('option').count()).toBe(10); // Lane 001 stays, 220 is revoked
    // the form that follows is that connection's once its cap is read
    const read = page.waitForResponse((answer) => answer.url().endsWith(`${lane(225)}/cap`));
    await select.selectOption(lane(225));
    await read;
    await page.getByRole('button', { name: 'Save connection cap' }).waitFor();
    await page.getByLabel('Connection cap (USD, empty: none)').fill('7');
    await page.getByRole('button', { name: 'Save connection cap' }).click();
    await page.getByText('Saved.', { exact: false }).waitFor();
    const cap = await admin.get<{ cap: { amount: string } | null }>(
      `/dashboard/api/connections/${lane(225)}/cap`,
    );
    expect(cap.body.cap?.amount).toBe('7.000000000000');
    await screenshot(page, 'big-org-03-caps-searched');
    await close();
  });

  it('grants a credential to a connection found by name, and names its connections in the table', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, '/provider-credentials');
    await page.getByRole('combobox', { name: /^Provider/ }).selectOption('vendor_b');
    await page.getByLabel('Name', { exact: true }).fill('Big key');
    await page.getByLabel('Vendor API key').fill('mock-ok-big-org-secret');
    const serves = page.getByRole('group', { name: 'Connections it serves' });
    await serves.getByRole('checkbox', { name: 'Filler app 001 › Lane 001' }).check();
    await serves.getByRole('searchbox').fill('seeded');
    await serves.getByRole('checkbox', { name: 'Seeded app › Seeded connection' }).check();
    // the one chosen before the search is still shown, and still chosen
    expect(
      await serves.getByRole('checkbox', { name: 'Filler app 001 › Lane 001' }).isChecked(),
    ).toBe(true);
    await page.getByRole('button', { name: 'Add credential' }).click();
    await page.getByRole('status').filter({ hasText: 'the vendor accepted the key' }).waitFor();
    // the next credential starts from an empty search and the whole list, nothing chosen (the
    // list is a new one, loaded again: its checkboxes come after the notice)
    const search = serves.getByRole('searchbox', { name: 'Find a connection by name' });
    expect(await search.inputValue()).toBe('');
    const firstLane = serves.getByRole('checkbox', { name: 'Filler app 001 › Lane 001' });
    expect(await firstLane.isChecked()).toBe(false);
    await expect.poll(() => serves.getByRole('checkbox').count()).toBe(200);
    const row = page.getByRole('row').filter({ hasText: 'Big key' });
    // in the order the API keeps the grants
    await expect
      .poll(async () =>
        (await row.getByRole('cell').nth(6).getByRole('listitem').allTextContents()).sort(),
      )
      .toEqual(['Filler app 001 › Lane 001', 'Seeded app › Seeded connection']);
    const { rows } = await db.query<{ app_connection_id: string }>(
      `SELECT g.app_connection_id FROM provider_credential_grants g
         JOIN provider_credentials c ON c.id = g.credential_id
        WHERE c.org_id = $1`,
      [org.org_id],
    );
    expect(rows.map((found) => found.app_connection_id).sort()).toEqual(
      [lane(1), org.app_connection_id].sort(),
    );
    await screenshot(page, 'big-org-04-credential-granted');
    await close();
  });

  it('keeps the buttons of a credential serving many connections inside its table, at 1280 and 390 px', async () => {
    const granted = [...Array.from({ length: 12 }, (_, i) => lane(i + 1)), org.app_connection_id];
    const added = await admin.post(`/dashboard/api/orgs/${org.org_id}/credentials`, {
      provider: 'vendor_b',
      name: 'Wide key',
      secret: 'mock-ok-big-org-wide',
      app_connection_ids: granted,
    });
    expect(added.status).toBe(201);
    for (const [width, height] of [
      [1280, 860],
      [390, 844],
    ] as const) {
      const { page, close } = await openWindow(browser, { width, height });
      await signedIn(page, '/provider-credentials');
      const row = page.getByRole('row').filter({ hasText: 'Wide key' });
      await expect
        .poll(() => row.getByRole('cell').nth(6).getByRole('listitem').allTextContents())
        .toContain('Filler app 001 › Lane 012');
      expect(await sidewaysOverflow(page)).toBe(0);
      const table = page.locator('.table-wrap').filter({ has: row });
      const section = page.locator('section', {
        has: page.getByRole('heading', { name: 'Credentials' }),
      });
      await screenshotOf(section, `big-org-05-credentials-wide-${width}`);
      // on a laptop the table fits its card; on a phone it scrolls inside it, as every table
      // does, and a button is reached by scrolling the table
      const scrolls = await table.evaluate((wrap) => wrap.scrollWidth > wrap.clientWidth);
      expect(scrolls, `the table scrolls at ${width} px`).toBe(width < 760);
      for (const name of ['Edit Wide key', 'Disable Wide key', 'Delete Wide key']) {
        const button = row.getByRole('button', { name });
        if (scrolls) await button.scrollIntoViewIfNeeded();
        const [inner, outer] = [await button.boundingBox(), await table.boundingBox()];
        const where = `${name} at ${width} px`;
        expect(inner!.x, where).toBeGreaterThanOrEqual(outer!.x);
        expect(inner!.x + inner!.width, where).toBeLessThanOrEqual(outer!.x + outer!.width);
      }
      if (scrolls) await screenshotOf(section, `big-org-05-credentials-wide-${width}-scrolled`);

      // the connection search box's label shows, as the form's other fields' do
      const form = page.locator('form', {
        has: page.getByRole('heading', { name: 'Add a credential' }),
      });
      const label = form.getByText('Find a connection by name', { exact: true });
      await form.getByRole('searchbox', { name: 'Find a connection by name' }).fill('seeded');
      await form.getByRole('checkbox', { name: 'Seeded app › Seeded connection' }).waitFor();
      expect(await label.isVisible()).toBe(true);
      expect((await label.boundingBox())!.height).toBeGreaterThan(10);
      expect(await sidewaysOverflow(page)).toBe(0);
      await screenshotOf(form, `big-org-05-credential-form-${width}`);
      await close();
    }
  });

  it('names a connection past the first page in usage by connection', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, '/usage?group=connection');
    const row = dataRows(page).filter({ hasText: 'Seeded app › Seeded connection' });
    await expect.poll(() => row.getByRole('cell').first().textContent()).toBe('1');
    await screenshot(page, 'big-org-06-usage-by-connection');
    await close();
  });
});
