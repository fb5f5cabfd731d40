// An organization run from the browser (chromium) against a live gateway on the real Redis and
// Postgres, as its admin would: an app, a connection and an API key (shown once, then only its
// hint); inference with that key; the requests in the usage plot, its CSV and the overview; a
// product user's cap refusing a request, credits granted and revoked, blocking and unblocking;
// rotating the key; a service key; a page on another origin failing to write; signing out.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatNano, numericToNano } from '../src/money.js';
import {
  chartColourAt,
  type BrowserWindow,
  dataRows,
  openWindow,
  screenshot,
  sidewaysOverflow,
  statValue,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { runCli, runCliJson, type GatewayProcess } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('dashboard-ui-workflows');
const email = uniqueEmail('operator');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let orgId: string;
let window: BrowserWindow;
let page: Page;
/** What the walk made, for the steps after it. */
const made: { appId?: string; connectionId?: string; apiKey?: string; rotatedKey?: string } = {};

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

/** A chat completion with `key`, as `externalUserId` of the app. */
async function infer(
  key: string,
  externalUserId: string,
): Promise<{ status: number; code?: string }> {
  const answer = await postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, {
    ...bearer(key),
    'x-gw-external-user-id': externalUserId,
  });
  if (answer.status === 200) await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
  const error = answer.body.error;
  return {
    status: answer.status,
    code: error?.provider_specific_fields?.error.code ?? error?.code,
  };
}

/** The sum of what the ledger charged the organization (as the API writes money). */
async function ledgerCost(): Promise<string> {
  const { rows } = await db.query<{ cost: string }>(
    'SELECT COALESCE(sum(sell_cost), 0)::text AS cost FROM usage_records WHERE org_id = $1',
    [orgId],
  );
  return formatNano(numericToNano(rows[0]!.cost));
}

/** How the dashboard shows an exact amount: trailing zeros past the cents dropped. */
const shown = (amount: string): string => {
  const [whole, fraction = ''] = amount.split('.');
  return `${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${fraction.replace(/0+$/, '').padEnd(2, '0')}`;
};

/** Follows a link of the navigation, and waits for its page's path. */
const go = async (label: string, section: string): Promise<void> => {
  await page
    .getByRole('navigation', { name: 'Dashboard' })
    .getByRole('link', { name: label, exact: true })
    .click();
  const path = `/dashboard/orgs/${orgId}${section ? `/${section}` : ''}`;
  await expect.poll(() => new URL(page.url()).pathname.startsWith(path)).toBe(true);
  await page.getByRole('heading', { level: 1 }).waitFor();
};

beforeAll(async () => {
  ui = await browserSuite(env, { users: { [email]: null } });
  ({ gateway, browser } = ui);
  orgId = ui.users[email]!.personal_org_id;
  await runCliJson(['wallet', 'topup', '--org-id', orgId, '--amount', '100.00'], env);
  window = await openWindow(browser);
  await window.context.grantPermissions(['clipboard-read', 'clipboard-write'], {
    origin: gateway.url,
  });
  page = window.page;
});

afterAll(async () => {
  await window?.close();
  await ui?.close();
});

describe('running an organization from the dashboard', () => {
  it('creates an app, a connection and an API key shown once with a copy button, then only as its hint', async () => {
    await ui.signIn(page, email);
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/orgs/${orgId}`);

    // a fresh organization: empty states, not errors
    await expect.poll(() => statValue(page, 'Requests this month')).toBe('0');
    await page.getByText('No requests this month yet.').waitFor();

    // keyboard users land on the new page's heading after a navigation
    await go('Apps & connections', 'apps');
    await expect.poll(() => page.evaluate('document.activeElement?.tagName')).toBe('H1');
    await expect.poll(() => page.evaluate('document.activeElement?.textContent')).toBe('Apps');

    await page.getByLabel('App name').fill('Checkout assistant');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('link', { name: 'Checkout assistant' }).click();
    await page.getByLabel('Connection name').fill('Production');
    await page.getByRole('button', { name: 'Create connection' }).click();
    const card = page.getByRole('listitem').filter({ hasText: 'Production' });
    await card.waitFor();
    const { rows: connections } = await db.query<{ id: string; app_id: string }>(
      `SELECT c.id, c.app_id FROM app_connections c JOIN apps a ON a.id = c.app_id
        WHERE a.org_id = $1 AND c.name = 'Production'`,
      [orgId],
    );
    expect(connections).toHaveLength(1);
    made.appId = connections[0]!.app_id;
    made.connectionId = connections[0]!.id;

    // the connection's keys, from its card
    await card.getByRole('link', { name: 'API keys of Production' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/orgs/${orgId}/keys/${made.connectionId}`);
    await page.getByText('No keys yet.').waitFor();
    await page.getByLabel('Key name (optional)').fill('backend');
    await page.getByRole('button', { name: 'Issue key' }).click();

    const shownOnce = page.getByRole('region', { name: /Your new API key/ });
    await shownOnce.waitFor();
    expect(await shownOnce.textContent()).toContain('this is the only time it is shown');
    const key = await shownOnce.getByLabel('New key').inputValue();
    expect(key).toMatch(/^gw_\w{20,}$/);
    made.apiKey = key;
    await shownOnce.getByRole('button', { name: 'Copy' }).click();
    await shownOnce.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
    // the key is in Postgres as a hash, never as itself
    const { rows: stored } = await db.query<{ key_hint: string; name: string }>(
      'SELECT key_hint, name FROM api_keys WHERE app_connection_id = $1',
      [made.connectionId],
    );
    expect(stored).toEqual([{ key_hint: `${key.slice(0, 10)}…`, name: 'backend' }]);
    await screenshot(page, '20-api-key-shown-once');

    // dismissed, it is gone from the page: the list shows only its hint
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();
    await shownOnce.waitFor({ state: 'detached' });
    const row = page.getByRole('row').filter({ hasText: 'backend' });
    await expect
      .poll(() => row.getByRole('cell').nth(1).textContent())
      .toBe(`${key.slice(0, 10)}…`);
    expect(await page.content()).not.toContain(key);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
    await screenshot(page, '21-api-keys');
  });

  it('shows inference made with that key in the usage plot, its CSV export and the overview', async () => {
    for (const user of ['alice', 'alice', 'bob']) {
      expect(await infer(made.apiKey!, user)).toEqual({ status: 200, code: undefined });
    }
    const total = await ledgerCost();
    expect(total).not.toBe('0.000000000000');

    await go('Usage', 'usage');
    await expect.poll(() => statValue(page, 'Requests')).toBe('3');
    await expect.poll(() => statValue(page, /^Cost/)).toBe(`${shown(total)} USD`);
    // the plot is drawn (uPlot's canvas), and its numbers are in the table under it
    await page.locator('.chart-box canvas').first().waitFor();
    const today = new Date().toISOString().slice(0, 10);
    const dayRow = dataRows(page).filter({ hasText: today });
    await expect.poll(() => dayRow.getByRole('cell').first().textContent()).toBe('3');
    await screenshot(page, '22-usage-by-day');

    await page.getByLabel('Group by').selectOption('model');
    const modelRow = dataRows(page).filter({ hasText: 'vendor_b/gpt-4o-mini' });
    await expect.poll(() => modelRow.getByRole('cell').first().textContent()).toBe('3');

    await page.getByLabel('Group by').selectOption('connection');
    const connectionRow = dataRows(page).filter({ hasText: 'Checkout assistant › Production' });
    await expect.poll(() => connectionRow.getByRole('cell').first().textContent()).toBe('3');
    // one group: its bar stands in the middle of the plot (blue there), not squeezed against
    // the axis at its left
    await expect
      .poll(async () => {
        const [red, , blue] = await chartColourAt(page, 0.5, 0.7);
        return blue! - red!;
      })
      .toBeGreaterThan(40);
    await screenshot(page, '22b-usage-by-connection');

    await page.getByLabel('Group by').selectOption('product_user');
    await page.getByLabel('Plot').selectOption('requests');
    const aliceRow = dataRows(page).filter({ hasText: 'alice' });
    await expect.poll(() => aliceRow.getByRole('cell').first().textContent()).toBe('2');
    await page.locator('.chart-box canvas').first().waitFor();
    await screenshot(page, '23-usage-by-product-user');

    // the CSV holds the API's exact money, one row per group
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(
      /^usage-.+-product_user-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv$/,
    );
    const csv = readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\r\n');
    expect(csv[0]).toBe(
      'product_user,label,currency,requests,input_tokens,output_tokens,total_tokens,' +
        'cache_write_tokens,cache_write_1h_tokens,cache_read_tokens,web_search_requests,cost,wallet_cost',
    );
    const { rows: expected } = await db.query<{ line: string }>(
      `SELECT concat_ws(',', u.id, u.external_user_id, trim(r.currency), count(*),
                sum(r.input_tokens), sum(r.output_tokens), sum(r.total_tokens),
                sum(r.cache_write_tokens), sum(r.cache_write_1h_tokens), sum(r.cache_read_tokens),
                sum(r.web_search_requests), to_char(sum(r.sell_cost), 'FM0.000000000000'),
                to_char(sum(r.wallet_cost), 'FM0.000000000000')) AS line
         FROM usage_records r JOIN product_users u ON u.id = r.product_user_id
        WHERE r.org_id = $1 GROUP BY u.id, u.external_user_id, r.currency`,
      [orgId],
    );
    expect(csv.slice(1).sort()).toEqual(expected.map((row) => row.line).sort());
    expect(csv.slice(1).find((line) => line.includes(',alice,'))).toMatch(/,alice,USD,2,/);

    await go('Overview', '');
    await expect.poll(() => statValue(page, 'Requests this month')).toBe('3');
    await expect.poll(() => statValue(page, 'Spent this month')).toBe(`${shown(total)} USD`);
    const topModels = page.getByRole('region', { name: 'Top models this month' });
    await expect.poll(() => topModels.textContent()).toContain('vendor_b/gpt-4o-mini');
    const topUsers = page.getByRole('region', { name: 'Top product users this month' });
    await expect
      .poll(() => topUsers.getByRole('listitem').first().textContent())
      .toContain('alice');
    await screenshot(page, '24-overview');
  });

  it('shows a product user’s cap refusing a request, and granting then revoking credits changes the profile and what is served', async () => {
    // the cap API is not in the dashboard yet: an operator sets it with the CLI
    const capped = await runCli(
      [
        'cap',
        'set',
        '--scope',
        'product_user',
        '--app-id',
        made.appId!,
        '--external-user-id',
        'alice',
        '--amount',
        '0.000000001',
      ],
      env,
    );
    expect(capped).toMatchObject({ code: 0, stderr: '' });
    expect(await infer(made.apiKey!, 'alice')).toEqual({
      status: 403,
      code: 'gw_product_user_allowance_insufficient',
    });

    await go('Product users', 'users');
    await page.getByLabel('Search product users').fill('ali');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.getByRole('row').count()).toBe(2); // header and alice
    await page.getByRole('link', { name: 'alice' }).click();
    await page.getByRole('heading', { name: 'alice', level: 1 }).waitFor();
    const allowance = page.getByRole('region', { name: 'Allowance this month' });
    await expect.poll(() => allowance.textContent()).toContain('Cap0.000000001 USD');
    // each region shows what its own read answers, in no set order
    const credits = page.getByRole('region', { name: 'Credits' });
    await expect.poll(() => credits.textContent()).toContain('Available0.00 USD');
    const usage = page.getByRole('region', { name: 'Usage this month' });
    await expect.poll(() => usage.textContent()).toContain('Requests2');

    // a bad amount: said before anything is sent, nothing granted
    await page.getByLabel('Amount').fill('0');
    await page.getByRole('button', { name: 'Grant credits…' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Enter an amount above 0.');
    await page.getByLabel('Amount').fill('1,000');
    await page.getByRole('button', { name: 'Grant credits…' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('no thousands separators');
    // credits in another currency than the user's costs: said before they are granted
    await page.getByLabel('Currency').fill('EUR');
    await page.getByText('Credits in EUR pay only for costs in EUR').waitFor();
    await page.getByLabel('Currency').fill('USD');
    await page.getByText('Credits in EUR').waitFor({ state: 'detached' });
    const grants = async () =>
      (
        await db.query<{ amount: string; status: string }>(
          `SELECT g.amount::text, g.status FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id
            WHERE u.org_id = $1 AND u.external_user_id = 'alice'`,
          [orgId],
        )
      ).rows;
    expect(await grants()).toEqual([]);

    await page.getByLabel('Amount').fill('5.25');
    await page.getByLabel('Reason (optional)').fill('sorry for the outage');
    await page.getByRole('button', { name: 'Grant credits…' }).click();
    // granted once confirmed, in a dialog that says how much goes to whom
    const confirmGrant = page.getByRole('dialog', { name: 'Grant 5.25 USD of credits?' });
    expect(await confirmGrant.locator('.facts').innerText()).toContain('alice');
    await confirmGrant.getByRole('button', { name: 'Grant 5.25 USD' }).click();
    await page.getByText('Granted 5.25 USD. Available credits now 5.25 USD.').waitFor();
    await expect.poll(() => credits.textContent()).toContain('Available5.25 USD');
    await expect.poll(() => allowance.textContent()).toContain('Plus credits5.25 USD');
    expect(await grants()).toEqual([{ amount: '5.250000000000', status: 'active' }]);
    await screenshot(page, '25-product-user-profile');

    // the credits are spent past the cap: served again
    expect(await infer(made.apiKey!, 'alice')).toEqual({ status: 200, code: undefined });

    // revoking what is left, after a confirmation that says what happens
    await page.getByRole('button', { name: 'Revoke the grant of 5.25 USD' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.textContent())
      .toContain('taken out of the user’s credits at once');
    await dialog.getByRole('button', { name: 'Revoke grant' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => credits.textContent()).toContain('Available0.00 USD');
    expect((await grants())[0]!.status).toBe('revoked');
    expect(await infer(made.apiKey!, 'alice')).toEqual({
      status: 403,
      code: 'gw_product_user_allowance_insufficient',
    });
  });

  it('blocks and unblocks a product user, and inference follows at once', async () => {
    await go('Product users', 'users');
    await page.getByRole('link', { name: 'bob' }).click();
    await page.getByRole('heading', { name: 'bob', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Block…' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('refuses their requests at once');
    await dialog.getByRole('button', { name: 'Block user' }).click();
    await page.getByText('Every request naming this user is refused').waitFor();
    expect(await infer(made.apiKey!, 'bob')).toEqual({
      status: 403,
      code: 'gw_product_user_blocked',
    });
    await screenshot(page, '26-product-user-blocked');

    await page.getByRole('button', { name: 'Unblock' }).click();
    await page.getByRole('button', { name: 'Block…' }).waitFor();
    expect(await infer(made.apiKey!, 'bob')).toEqual({ status: 200, code: undefined });
    const { rows } = await db.query<{ action: string }>(
      `SELECT action FROM dashboard_audit_log WHERE org_id = $1 AND action LIKE 'product_user.%'
        ORDER BY created_at`,
      [orgId],
    );
    expect(rows.map((row) => row.action)).toEqual(['product_user.block', 'product_user.unblock']);
  });

  it('rotates the API key: the new one is shown once and works, the old one is refused', async () => {
    await go('API keys', 'keys');
    const row = page.getByRole('row').filter({ hasText: 'backend' });
    await row.getByRole('button', { name: 'Rotate backend' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('stops working at once');
    await dialog.getByLabel('The old key stops working').selectOption('3600');
    await expect.poll(() => dialog.textContent()).toContain('stops working in 1 hour');
    await dialog.getByLabel('The old key stops working').selectOption('0');
    await screenshot(page, '27-rotate-confirmation');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    const shownOnce = page.getByRole('region', { name: /The new key replacing/ });
    const rotated = await shownOnce.getByLabel('New key').inputValue();
    expect(rotated).toMatch(/^gw_/);
    expect(rotated).not.toBe(made.apiKey);
    made.rotatedKey = rotated;

    const old = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      chat,
      bearer(made.apiKey!),
    );
    expect(old.status).toBe(401);
    expect(await infer(rotated, 'carol')).toEqual({ status: 200, code: undefined });
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();
    await expect
      .poll(() =>
        page
          .getByRole('row')
          .filter({ hasText: made.apiKey!.slice(0, 10) })
          .textContent(),
      )
      .toContain('revoked');
  });

  it('issues a service key shown once, and revokes it after a confirmation', async () => {
    await go('Service keys', 'service-keys');
    await page.getByRole('button', { name: 'Issue service key' }).click();
    const shownOnce = page.getByRole('region', { name: 'Your new service key' });
    const key = await shownOnce.getByLabel('New key').inputValue();
    expect(key).toMatch(/^gw_svc_/);
    await shownOnce.getByRole('button', { name: /hide the key/ }).click();
    const hint = `${key.slice(0, 10)}…`;
    await page.getByRole('button', { name: `Revoke ${hint}` }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('gone for good');
    await dialog.getByRole('button', { name: 'Revoke service key' }).click();
    await expect
      .poll(() => page.getByRole('row').filter({ hasText: hint }).textContent())
      .toContain('revoked');
    const refused = await fetch(
      `${gateway.url}/product-users/by-external-id?app_id=x&external_user_id=y`,
      {
        headers: bearer(key),
      },
    );
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as ErrorBody).error.code).toBe('gw_service_key_inactive');
  });

  it('refuses writes from a page on another origin, though the browser sends the session cookie', async () => {
    const attacker = await serveAttackerPage(gateway.url, orgId);
    try {
      const apps = async () =>
        Number(
          (
            await db.query<{ n: string }>('SELECT count(*) AS n FROM apps WHERE org_id = $1', [
              orgId,
            ])
          ).rows[0]!.n,
        );
      const before = await apps();
      const attack = await window.context.newPage();
      const posts: { status: number; code: string; cookie: string }[] = [];
      attack.on('response', (response) => {
        if (response.request().method() !== 'POST' || !response.url().startsWith(gateway.url)) {
          return;
        }
        // an opaque (no-cors) answer's body is not kept by the browser: its status is
        void Promise.all([response.json().catch(() => null), response.request().allHeaders()]).then(
          ([body, headers]) =>
            posts.push({
              status: response.status(),
              code: (body as ErrorBody | null)?.error.code ?? '(unread)',
              cookie: headers.cookie ?? '',
            }),
        );
      });

      // a form posted across origins (no preflight): the session cookie goes along (another
      // port of the same host is the same site), and the gateway refuses on the Origin
      await attack.goto(`${attacker.url}/form`);
      await expect.poll(() => posts.length).toBe(1);
      expect(posts[0]).toMatchObject({ status: 403, code: 'gw_origin_not_allowed' });
      expect(posts[0]!.cookie).toMatch(/gw_session=/);

      // a script's credentialed fetches: the JSON one fails its preflight and is never sent;
      // the "simple" one is sent (its answer is opaque to the page), and refused
      await attack.goto(`${attacker.url}/page`);
      await attack.locator('#result[data-done]').waitFor();
      const results = JSON.parse((await attack.locator('#result').getAttribute('data-done'))!) as {
        simple: string;
        json: string;
      };
      expect(results).toEqual({ simple: 'opaque', json: 'blocked' });
      await expect.poll(() => posts.length).toBe(2);
      expect(posts[1]!.status).toBe(403);
      expect(await apps()).toBe(before); // nothing changed
      await attack.close();
    } finally {
      await attacker.close();
    }
  });

  it('fits a phone-sized screen', async () => {
    const phone = await openWindow(browser, { width: 390, height: 844 });
    await ui.signIn(phone.page, email);
    await phone.page.goto(`${gateway.url}/dashboard/orgs/${orgId}/usage`);
    await phone.page.locator('.chart-box canvas').first().waitFor();
    expect(await sidewaysOverflow(phone.page)).toBe(0);
    await screenshot(phone.page, '28-phone-usage');
    await phone.page.goto(`${gateway.url}/dashboard/orgs/${orgId}/keys`);
    await phone.page.getByRole('row').filter({ hasText: 'backend' }).first().waitFor();
    await screenshot(phone.page, '29-phone-api-keys');
    expect(await sidewaysOverflow(phone.page)).toBe(0);
    await phone.close();
  });

  it('signs out: the session is refused by the API and deep links show the sign-in page', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    const status = await page.evaluate(
      `fetch('/dashboard/api/orgs/${orgId}/usage').then((response) => response.status)`,
    );
    expect(status).toBe(401);
    await page.goto(`${gateway.url}/dashboard/orgs/${orgId}/users`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
  });
});

/**
 * A page on another origin (another port of 127.0.0.1: the same site, so SameSite=Lax does not
 * keep the cookie off) that tries to create an app in the organization.
 */
async function serveAttackerPage(
  gatewayUrl: string,
  targetOrgId: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const target = `${gatewayUrl}/dashboard/api/orgs/${targetOrgId}/apps`;
  const pages: Record<string, string> = {
    '/form': `<!doctype html><form method="post" action="${target}" enctype="text/plain">
      <input name='{"name":"evil form","x":"' value='"}'></form>
      <script>document.forms[0].submit()</script>`,
    '/page': `<!doctype html><p id="result">working</p><script>
      const target = ${JSON.stringify(target)};
      const body = JSON.stringify({ name: 'evil fetch' });
      const outcome = (promise) => promise.then((r) => (r.type === 'opaque' ? 'opaque' : String(r.status)), () => 'blocked');
      Promise.all([
        outcome(fetch(target, { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body })),
        outcome(fetch(target, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body })),
      ]).then(([simple, json]) => {
        document.getElementById('result').setAttribute('data-done', JSON.stringify({ simple, json }));
      });
    </script>`,
  };
  const server: Server = createServer((request, response) => {
    const html = pages[request.url ?? ''];
    response.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    response.end(html ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
