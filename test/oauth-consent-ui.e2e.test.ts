// The OAuth consent flow in a real browser (chromium): an app sends the user to the
// gateway's authorization endpoint; the user signs in on the dashboard's sign-in page, comes
// back to the consent page, picks the paying organization and approves; the browser lands on
// the app's own redirect receiver (a local server here) with the code and the state, and the
// app exchanges the code. The pages run under their Content-Security-Policy: a violation, or
// a blocked redirect of the form's answer (form-action), fails the test. A monthly cap typed on
// the consent page bounds the app from its first request, and the Connected apps page of the
// dashboard changes it (decision 415).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { createUser, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson } from './support/http.js';
import {
  authorizeQuery,
  createOAuthClient,
  pkcePair,
  postForm,
  type RegisteredClient,
  type TokenAnswer,
} from './support/oauth.js';
import { runCliJson, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('oauth-ui');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let maker: SeededOrg;
let receiver: Server;
let callback: string;
let client: RegisteredClient;
/** What the app's redirect receiver was sent. */
const received: URL[] = [];

beforeAll(async () => {
  receiver = createServer((request, response) => {
    received.push(new URL(request.url ?? '/', callback));
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>Example app</title><h1>Connected to gw</h1>');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callback`;
  ui = await browserSuite(env, { seed: ['--name', 'Example Apps Ltd'] });
  ({ gateway, browser, org: maker } = ui);
  client = await createOAuthClient(env, maker.app_id, [callback], {
    public: true,
    name: 'Example',
  });
});

afterAll(async () => {
  await ui?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

function watched(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/.test(message.text())) problems.push(message.text());
  });
  return problems;
}

describe('connecting an app in a browser', () => {
  it('signs in, approves on the consent page and lands on the app’s redirect URI with the code and the state', async () => {
    const email = uniqueEmail('browser-user');
    const user = await createUser(env, email);
    await runCliJson(
      ['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '1.00'],
      env,
    );
    const context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const problems = watched(page);
    const pkce = pkcePair();

    // The app sends the browser to the gateway; without a session it lands on the sign-in page.
    await page.goto(
      `${gateway.url}/oauth/authorize?${authorizeQuery({
        clientId: client.client_id,
        redirectUri: callback,
        state: 'from-the-app',
        challenge: pkce.challenge,
      })}`,
    );
    await page.getByLabel('E-mail').waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // Back on the authorization request: the consent page.
    await page.getByRole('heading', { level: 1 }).filter({ hasText: 'Seeded app' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/oauth/authorize');
    expect(await page.textContent('main')).toContain('Example Apps Ltd');
    expect(await page.getByLabel('Organization that pays').inputValue()).toBe(user.personal_org_id);
    await screenshot(page, 'oauth-01-consent');

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Connected to gw' }).waitFor();
    const landed = new URL(page.url());
    expect(`${landed.origin}${landed.pathname}`).toBe(callback);
    expect(landed.searchParams.get('state')).toBe('from-the-app');
    const code = landed.searchParams.get('code')!;
    expect(code).toMatch(/^[0-9A-Za-z]{43}$/);
    const callbacks = received.filter((url) => url.pathname === '/callback'); // not /favicon.ico
    expect(callbacks.at(-1)?.searchParams.get('code')).toBe(code);
    await screenshot(page, 'oauth-02-landed');
    await context.close();
    expect(problems).toEqual([]);

    // The app exchanges the code and makes a request paid by the user's organization.
    const token = await postForm<TokenAnswer>(`${gateway.url}/oauth/token`, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback,
      code_verifier: pkce.verifier,
      client_id: client.client_id,
    });
    expect(token.status).toBe(200);
    const answer = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
      bearer(token.body.access_token),
    );
    expect(answer.status).toBe(200);
    const { rows } = await db.query('SELECT org_id FROM app_connections WHERE id = $1', [
      token.body.app_connection_id,
    ]);
    expect(rows).toEqual([{ org_id: user.personal_org_id }]);
  });

  it('denying sends the browser back with error=access_denied', async () => {
    const email = uniqueEmail('browser-denier');
    await createUser(env, email);
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const problems = watched(page);
    await page.goto(`${gateway.url}/dashboard/sign-in`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // already signed in: the consent page at once
    await page.goto(
      `${gateway.url}/oauth/authorize?${authorizeQuery({
        clientId: client.client_id,
        redirectUri: callback,
        state: 'deny-me',
        challenge: pkcePair().challenge,
      })}`,
    );
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByRole('heading', { name: 'Connected to gw' }).waitFor();
    const landed = new URL(page.url());
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe('deny-me');
    await context.close();
    expect(problems).toEqual([]);
  });

  it('a monthly cap typed on the consent page bounds the app from its first request; the Connected apps page raises it', async () => {
    const email = uniqueEmail('browser-capper');
    const user = await createUser(env, email);
    await runCliJson(
      ['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '1.00'],
      env,
    );
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const problems = watched(page);
    const pkce = pkcePair();
    await page.goto(`${gateway.url}/dashboard/sign-in`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(
      `${gateway.url}/oauth/authorize?${authorizeQuery({
        clientId: client.client_id,
        redirectUri: callback,
        state: 'capped',
        challenge: pkce.challenge,
      })}`,
    );
    const cap = page.getByLabel('Monthly spending cap (USD, optional)');
    expect(await cap.inputValue()).toBe('');
    expect(await cap.getAttribute('placeholder')).toBe('No cap');

    // Not an amount: the same page again, saying why, with what was typed.
    await cap.fill('ten dollars');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'Monthly spending cap: must be digits with an optional decimal point, like 25 or 12.50 (no sign, thousands separators, spaces or currency; at most 12 decimals)',
    );
    expect(await cap.inputValue()).toBe('ten dollars');
    expect(received.filter((url) => url.searchParams.get('state') === 'capped')).toEqual([]);
    await screenshot(page, 'oauth-03-cap-refused');

    // A real cap: less than one request costs, to see it hold.
    await cap.fill('0.000001');
    await screenshot(page, 'oauth-04-consent-with-cap');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Connected to gw' }).waitFor();
    const code = new URL(page.url()).searchParams.get('code')!;
    const token = await postForm<TokenAnswer>(`${gateway.url}/oauth/token`, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: callback,
      code_verifier: pkce.verifier,
      client_id: client.client_id,
    });
    expect(token.status).toBe(200);
    const infer = () =>
      postJson<{ error?: { code: string; cap_scope?: string } }>(
        `${gateway.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 8,
        },
        bearer(token.body.access_token),
      );
    const refused = await infer();
    expect([refused.status, refused.body.error?.code, refused.body.error?.cap_scope]).toEqual([
      403,
      'gw_cap_exceeded',
      'app_connection',
    ]);

    // The dashboard shows the cap; the user raises it there.
    await page.goto(`${gateway.url}/dashboard/orgs/${user.personal_org_id}/connected-apps`);
    const row = page.getByRole('row').filter({ hasText: 'Seeded app' });
    await row.waitFor();
    const column = (await page.getByRole('columnheader').allTextContents()).indexOf(
      'Spent this month',
    );
    expect(column).toBeGreaterThan(-1);
    const capCell = () => row.getByRole('cell').nth(column).locator('.cap-cell > span').innerText();
    await expect.poll(capCell).toMatch(/^cap 0\.000001\s*USD$/);
    await row.getByRole('button', { name: 'Edit cap of Seeded app' }).click();
    const card = page.getByRole('region', { name: 'Monthly cap of Seeded app' });
    await card.getByLabel('Monthly cap (USD)').fill('5');
    await card.getByRole('button', { name: 'Save cap' }).click();
    await card.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await expect.poll(capCell).toMatch(/^cap 5\.00\s*USD$/);
    await screenshot(page, 'oauth-05-connected-app-cap');
    expect((await infer()).status).toBe(200);
    const { rows } = await db.query<{ amount: string }>(
      `SELECT amount::text FROM cap_rules WHERE app_connection_id = $1 AND status = 'active'`,
      [token.body.app_connection_id],
    );
    expect(rows).toEqual([{ amount: '5.000000000000' }]);

    // Connecting the app again: the page says where it is connected, starting from its cap.
    await page.goto(
      `${gateway.url}/oauth/authorize?${authorizeQuery({
        clientId: client.client_id,
        redirectUri: callback,
        state: 'again',
        challenge: pkcePair().challenge,
      })}`,
    );
    expect(await cap.inputValue()).toBe('5');
    expect(await page.locator('#already_connected li').allTextContents()).toEqual([
      `${email} (personal): a cap of 5 USD a month`,
    ]);
    await screenshot(page, 'oauth-06-connect-again');
    await context.close();
    expect(problems).toEqual([]);
  });
});
