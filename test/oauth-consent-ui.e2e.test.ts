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
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsSent, screenshot, screenshotOf, sidewaysOverflow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { createMember, createUser, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson } from './support/http.js';
import {
  authorizeQuery,
  connectAndExchange,
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

/** The address the app sends the browser to: this test's client, PKCE `challenge`, `state`. */
function consentUrl(state: string, challenge: string): string {
  return `${gateway.url}/oauth/authorize?${authorizeQuery({
    clientId: client.client_id,
    redirectUri: callback,
    state,
    challenge,
  })}`;
}

/**
 * A window of its own (its own cookies), its page's errors and refused scripts or styles
 * collected in `problems`; signed in as `email` when one is given, with the user's session as
 * signing in leaves it in the browser (test/support/browser.ts SharedSessions): signing in on
 * the way to the consent page has the first test.
 */
async function openWindow(
  options: { email?: string; viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext(options.viewport && { viewport: options.viewport });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const problems = watched(page);
  if (options.email !== undefined) await ui.sessions.give(page, options.email);
  return { context, page, problems };
}

describe('connecting an app in a browser', () => {
  it('signs in, approves on the consent page and lands on the app’s redirect URI with the code and the state', async () => {
    const email = uniqueEmail('browser-user');
    const user = await createUser(env, email);
    await runCliJson(
      ['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '1.00'],
      env,
    );
    const { context, page, problems } = await openWindow({
      viewport: { width: 1000, height: 800 },
    });
    const pkce = pkcePair();

    // The app sends the browser to the gateway; without a session it lands on the sign-in page.
    await page.goto(consentUrl('from-the-app', pkce.challenge));
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
    const { context, page, problems } = await openWindow({ email });
    // already signed in: the consent page at once
    await page.goto(consentUrl('deny-me', pkcePair().challenge));
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
    const { context, page, problems } = await openWindow({
      email,
      viewport: { width: 1000, height: 900 },
    });
    const pkce = pkcePair();
    await page.goto(consentUrl('capped', pkce.challenge));
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
    // the page fits its 1000 px window: the table and the card, no sideways scrolling
    expect(await sidewaysOverflow(page)).toBe(0);
    await row.getByRole('button', { name: 'Edit cap of Seeded app' }).click();
    // the connection's cap form, as on the Caps page, in a card naming the app and its spend
    const card = page.getByRole('region', { name: 'Caps of Seeded app' });
    const amount = card.getByLabel('Connection cap (USD, empty: none)');
    await expect.poll(() => amount.inputValue()).toBe('0.000001');
    expect(await card.getByText(/^Spent this month:/).innerText()).toMatch(
      /^Spent this month: 0\.00\s*USD\. Requests of the app that would pass its cap are refused \(403\)\.$/,
    );
    expect(await sidewaysOverflow(page)).toBe(0);
    // a cap at or below what it spent this month refuses its next request: that asks first,
    // and cancelled, nothing is written
    const puts = requestsSent(page, 'PUT', /\/cap$/);
    await amount.fill('0');
    await card.getByRole('button', { name: 'Save connection cap' }).click();
    const lowering = page.getByRole('dialog', { name: 'Cap Seeded app at 0.00 USD?' });
    await lowering.waitFor();
    expect(await lowering.textContent()).toContain('refused with 403 until the month ends');
    await screenshotOf(lowering, 'oauth-05-connected-app-cap-confirm');
    await lowering.getByRole('button', { name: 'Cancel' }).click();
    await lowering.waitFor({ state: 'detached' });
    expect(puts).toEqual([]);
    await amount.fill('5');
    await card.getByRole('button', { name: 'Save connection cap' }).click();
    await card.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await expect.poll(capCell).toMatch(/^cap 5\.00\s*USD$/);
    expect(puts).toHaveLength(1);
    expect(await sidewaysOverflow(page)).toBe(0);
    await screenshot(page, 'oauth-05-connected-app-cap');
    expect((await infer()).status).toBe(200);
    const { rows } = await db.query<{ amount: string }>(
      `SELECT amount::text FROM cap_rules WHERE app_connection_id = $1 AND status = 'active'`,
      [token.body.app_connection_id],
    );
    expect(rows).toEqual([{ amount: '5.000000000000' }]);

    // Connecting the app again: the page says where it is connected, starting from its cap.
    await page.goto(consentUrl('again', pkcePair().challenge));
    expect(await cap.inputValue()).toBe('5');
    expect(await page.locator('#already_connected li').allTextContents()).toEqual([
      `${email} (personal): a cap of 5 USD a month`,
    ]);
    await screenshot(page, 'oauth-06-connect-again');
    await context.close();
    expect(problems).toEqual([]);
  });
  it('the cap field follows the organization picked while the user has not typed in it; without script it keeps its first amount and says whose it is', async () => {
    // connected before in the personal organization with a cap of 5; not in Example Apps Ltd
    const email = uniqueEmail('browser-switcher');
    const user = await createMember(env, email, maker.org_id, 'admin');
    await connectAndExchange(gateway.url, await ui.client(email), client, {
      orgId: user.personal_org_id,
      capAmount: '5',
    });
    const pkce = pkcePair();
    const { context, page, problems } = await openWindow({ email });
    const personalNote = `Filled in with the cap of its newest connection to ${email} (personal).`;

    await page.goto(consentUrl('follow', pkce.challenge));
    const org = page.getByLabel('Organization that pays');
    const cap = page.getByLabel('Monthly spending cap (USD, optional)');
    const note = page.locator('#cap_source');
    expect(await org.inputValue()).toBe(user.personal_org_id);
    expect(await cap.inputValue()).toBe('5');
    expect(await note.textContent()).toBe(personalNote);
    expect(await note.isVisible()).toBe(true);
    // another organization: its cap (none here), and no note
    await org.selectOption(maker.org_id);
    await expect.poll(() => cap.inputValue()).toBe('');
    expect(await note.isVisible()).toBe(false);
    await screenshot(page, 'oauth-07-consent-other-org');
    // back: the personal organization's cap again
    await org.selectOption(user.personal_org_id);
    await expect.poll(() => cap.inputValue()).toBe('5');
    expect(await note.isVisible()).toBe(true);
    // typed by the user: theirs stays whatever organization is picked, and the note goes
    await cap.fill('3');
    expect(await note.isVisible()).toBe(false);
    await org.selectOption(maker.org_id);
    expect(await cap.inputValue()).toBe('3');
    // approved so: the new connection in Example Apps Ltd has the cap the page showed
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Connected to gw' }).waitFor();
    const token = await postForm<TokenAnswer>(`${gateway.url}/oauth/token`, {
      grant_type: 'authorization_code',
      code: new URL(page.url()).searchParams.get('code')!,
      redirect_uri: callback,
      code_verifier: pkce.verifier,
      client_id: client.client_id,
    });
    expect(token.status).toBe(200);
    const { rows } = await db.query(
      `SELECT c.org_id, r.amount::text FROM app_connections c
         JOIN cap_rules r ON r.app_connection_id = c.id AND r.status = 'active'
        WHERE c.id = $1`,
      [token.body.app_connection_id],
    );
    expect(rows).toEqual([{ org_id: maker.org_id, amount: '3.000000000000' }]);
    // the page's one script ran under its policy: no violation
    expect(problems).toEqual([]);

    // without script (the same session): the field keeps its first amount, and the note says
    // whose it is
    const plainContext = await browser.newContext({
      javaScriptEnabled: false,
      storageState: await context.storageState(),
    });
    plainContext.setDefaultTimeout(10_000);
    await context.close();
    const plain = { context: plainContext, page: await plainContext.newPage() };
    await plain.page.goto(consentUrl('no-script', pkce.challenge));
    const plainCap = plain.page.getByLabel('Monthly spending cap (USD, optional)');
    expect(await plainCap.inputValue()).toBe('5');
    await plain.page.getByLabel('Organization that pays').selectOption(maker.org_id);
    expect(await plainCap.inputValue()).toBe('5');
    expect(await plain.page.locator('#cap_source').textContent()).toBe(personalNote);
    await screenshot(plain.page, 'oauth-08-consent-no-script');
    await plain.context.close();
  });

  it('the browser’s Back button shows the consent page with the cap of the organization it shows', async () => {
    // connected before in the personal organization with a cap of 5; another organization picked
    // on the page (its own cap there, if an earlier test connected it) and approved; Back: the
    // browser restores no half of the form (decisions 439, 445)
    const email = uniqueEmail('browser-back');
    const user = await createMember(env, email, maker.org_id, 'admin');
    await connectAndExchange(gateway.url, await ui.client(email), client, {
      orgId: user.personal_org_id,
      capAmount: '5',
    });
    const { context, page, problems } = await openWindow({ email });
    await page.goto(consentUrl('back', pkcePair().challenge));
    const org = page.getByLabel('Organization that pays');
    const cap = page.getByLabel('Monthly spending cap (USD, optional)');
    await org.selectOption(maker.org_id);
    const makerCap = await org.locator(`option[value="${maker.org_id}"]`).getAttribute('data-cap');
    expect(makerCap).not.toBe('5');
    await expect.poll(() => cap.inputValue()).toBe(makerCap);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Connected to gw' }).waitFor();

    await page.goBack();
    await cap.waitFor();
    await screenshot(page, 'oauth-09-consent-after-back');
    expect(await org.inputValue()).toBe(user.personal_org_id);
    expect(await cap.inputValue()).toBe('5');
    expect(await page.locator('#cap_source').textContent()).toBe(
      `Filled in with the cap of its newest connection to ${email} (personal).`,
    );

    // Picked again, then away to the app's page without approving, and Back (decision 445):
    // whatever the browser restores, the organization and the cap shown are one pair.
    await org.selectOption(maker.org_id);
    await expect.poll(() => cap.inputValue()).toBe(makerCap);
    await page.goto(callback);
    await page.goBack();
    await org.waitFor();
    const shown = { org: await org.inputValue(), cap: await cap.inputValue() };
    await screenshot(page, 'oauth-10-consent-back-after-leaving');
    expect([
      { org: maker.org_id, cap: makerCap },
      { org: user.personal_org_id, cap: '5' },
    ]).toContainEqual(shown);
    await context.close();
    expect(problems).toEqual([]);
  });
});
