// Names as long as the API takes them, without a space to break at, in a real browser
// (chromium, 1280 px) against a live gateway: an app, a connection, an API key, a provider
// credential and an OAuth client named with 200 characters (docs/limits.md), a webhook
// endpoint described with 500 and a product user whose external id and name have 256. Each
// table that shows one keeps it inside its box (broken across lines, not widening the table
// past its card or the page off the screen), measured from the elements' boxes. And the app
// page's header: the lede sentence on a line of its own, under the id and status.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, sidewaysOverflow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer } from './support/http.js';
import type { SeededOrg } from './support/processes.js';

const { env } = isolatedContext('dashboard-ui-long-names');
const admin = uniqueEmail('long-names-admin');
let ui: BrowserSuite;
let browser: Browser;
let org: SeededOrg;
let client: DashboardClient;

/** `length` characters without a space, hyphen or other place a line may break. */
const unbroken = (start: string, length: number): string =>
  (start + 'Wolfeschlegelsteinhausenbergerdorff'.repeat(Math.ceil(length / 35))).slice(0, length);

const names = {
  app: unbroken('App', 200),
  connection: unbroken('Connection', 200),
  key: unbroken('Key', 200),
  credential: unbroken('Credential', 200),
  oauthClient: unbroken('OAuthClient', 200),
  webhook: unbroken('Endpoint', 500),
  externalId: unbroken('user', 256),
  displayName: unbroken('Display', 256),
};
let appId: string;
let connectionId: string;

/**
 * How the cells showing `text` sit in their table's box (`.table-wrap`, which scrolls sideways
 * rather than widen the page): how many there are, how far (px) their text sticks out of the
 * box's visible part (0: none), and the widest one's share of the box's width in percent (a
 * name broken inside its cell leaves room for the other columns).
 */
async function inItsTable(
  page: Page,
  text: string,
): Promise<{ found: number; outside: number; widthPercent: number }> {
  return page.evaluate(`(() => {
    const text = ${JSON.stringify(text)};
    const cells = [...document.querySelectorAll('.table-wrap td, .table-wrap th')].filter(
      (cell) => cell.textContent.includes(text),
    );
    let outside = 0;
    let widthPercent = 0;
    for (const cell of cells) {
      const wrap = cell.closest('.table-wrap');
      const box = wrap.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(cell);
      const shown = range.getBoundingClientRect();
      outside = Math.max(outside, shown.right - box.right, box.left - shown.left);
      const width = cell.getBoundingClientRect().width;
      widthPercent = Math.max(widthPercent, Math.round((100 * width) / wrap.clientWidth));
    }
    return { found: cells.length, outside: Math.max(0, Math.round(outside)), widthPercent };
  })()`);
}

async function visit(page: Page, path: string): Promise<void> {
  await ui.visit(page, admin, `/dashboard/orgs/${org.org_id}${path}`);
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Long Names Co', '--wallet', '100.00'],
    users: { [admin]: 'admin' },
    gatewayEnv: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
  });
  ({ browser, org } = ui);
  client = await ui.client(admin);
  const app = await client.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/apps`, {
    name: names.app,
  });
  expect(app.status).toBe(201);
  appId = app.body.id;
  const connection = await client.post<{ id: string }>(`/dashboard/api/apps/${appId}/connections`, {
    name: names.connection,
  });
  expect(connection.status).toBe(201);
  connectionId = connection.body.id;
  const writes = await Promise.all([
    client.post(`/dashboard/api/connections/${connectionId}/api-keys`, { name: names.key }),
    client.post(`/dashboard/api/orgs/${org.org_id}/credentials`, {
      provider: 'vendor_b',
      name: names.credential,
      secret: 'mock-ok-long-names',
      app_connection_ids: [connectionId],
    }),
    client.post(`/dashboard/api/apps/${appId}/oauth-clients`, {
      name: names.oauthClient,
      redirect_uris: ['https://example.com/callback'],
    }),
    client.post(`/dashboard/api/orgs/${org.org_id}/webhooks`, {
      url: 'http://127.0.0.1:9/long-names',
      description: names.webhook,
    }),
  ]);
  expect(writes.map((write) => write.status)).toEqual([201, 201, 201, 201]);
  const user = await fetch(`${ui.gateway.url}/product-users/by-external-id`, {
    method: 'PUT',
    headers: { ...bearer(org.service_key), 'content-type': 'application/json' },
    body: JSON.stringify({
      app_id: org.app_id,
      external_user_id: names.externalId,
      display_name: names.displayName,
    }),
  });
  expect(user.status).toBeLessThan(300);
});

afterAll(() => ui?.close());

describe('a name as long as the API takes, without a space', () => {
  it.each([
    ['apps', 'the apps table', () => '/apps', [names.app]],
    ['app', 'the app’s OAuth clients', () => `/apps/${appId}`, [names.oauthClient]],
    ['keys', 'the API keys of a connection', () => `/keys/${connectionId}`, [names.key]],
    [
      'credentials',
      'the provider credentials (their name, the connection granted)',
      () => '/provider-credentials',
      [names.credential, names.connection],
    ],
    ['webhooks', 'the webhook endpoints', () => '/webhooks', [names.webhook]],
    [
      'users',
      'the product users (external id, name, app)',
      () => '/users',
      [names.externalId, names.displayName],
    ],
  ])('%s: stays inside %s at 1280 px', async (shot, what, path, texts) => {
    const { page, close } = await openWindow(browser);
    await visit(page, path());
    // in its table (a credential's connections are named once looked up)
    for (const text of texts) await page.locator('.table-wrap', { hasText: text }).waitFor();
    const measured = [];
    for (const text of texts) measured.push(await inItsTable(page, text));
    await screenshot(page, `long-names-${shot}`);
    // every name is in a table and none sticks out of its visible box; none takes more than
    // 70 % of its width, leaving the other columns room (unbroken, each was wider than the box)
    expect(
      measured.map(({ found, outside, widthPercent }) => ({
        found: found > 0,
        outside,
        narrow: widthPercent <= 70,
      })),
      `${what}: ${JSON.stringify(measured)}`,
    ).toEqual(texts.map(() => ({ found: true, outside: 0, narrow: true })));
    expect(await sidewaysOverflow(page)).toBe(0);
    await close();
  });
});

describe('the app page’s header', () => {
  it('puts the lede on a line of its own, below the app’s id and status', async () => {
    const { page, close } = await openWindow(browser);
    await visit(page, `/apps/${appId}`);
    const header = page.locator('header.page-header');
    const lede = header.getByText('Connections of this app.');
    await lede.waitFor();
    const id = header.getByText(appId, { exact: true });
    const status = header.getByText('active', { exact: true });
    const [ledeBox, idBox, statusBox] = await Promise.all(
      [lede, id, status].map((part) => part.boundingBox()),
    );
    // the lede starts below the bottom of the id and status line
    expect(ledeBox!.y).toBeGreaterThanOrEqual(
      Math.max(idBox!.y + idBox!.height, statusBox!.y + statusBox!.height),
    );
    expect(await lede.textContent()).toBe(
      'Connections of this app. Each connection’s API keys follow its settings at once.',
    );
    await screenshot(page, 'long-names-app-header');
    await close();
  });
});
