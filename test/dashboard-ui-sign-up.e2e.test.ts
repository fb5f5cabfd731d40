// Signing up in the dashboard (chromium) against live gateways on the real Redis and Postgres:
// where the operator turned self-service sign-up on (DASHBOARD_SIGNUP), the sign-in page links
// to a sign-up form that makes the account and signs in; where it is off, the page says an
// operator makes accounts, and /dashboard/sign-up shows the sign-in page, not JSON.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import type { GatewayProcess } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-sign-up');
let ui: BrowserSuite;
/** The file's gateway: sign-up off, as by default. */
let closed: GatewayProcess;
let open: GatewayProcess;
let browser: Browser;

beforeAll(async () => {
  ui = await browserSuite(env);
  ({ gateway: closed, browser } = ui);
  open = await ui.startGateway({ DASHBOARD_SIGNUP: 'true' });
});

afterAll(() => ui?.close());

describe('signing up in the dashboard', () => {
  it('offers a sign-up form where sign-up is on, which makes the account and signs in', async () => {
    const { page, close } = await openWindow(browser);
    await page.goto(`${open.url}/dashboard/`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Create one' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-up');
    await screenshot(page, 'sign-up-01-form');

    // the gateway's refusal, shown in the form
    const email = uniqueEmail('Signed-Up');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('gw_invalid_request');
    // typing again clears it
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('alert').waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const { rows } = await db.query<{ id: string; personal_org_id: string }>(
      'SELECT id, personal_org_id FROM dashboard_users WHERE email = $1',
      [email.toLowerCase()],
    );
    expect(rows).toHaveLength(1);
    await expect
      .poll(() => new URL(page.url()).pathname)
      .toBe(`/dashboard/orgs/${rows[0]!.personal_org_id}`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await screenshot(page, 'sign-up-02-signed-in');
    await close();
  });

  it('says an operator makes accounts where sign-up is off, and answers /dashboard/sign-up with the sign-in page', async () => {
    const { page, close } = await openWindow(browser);
    const answer = await page.goto(`${closed.url}/dashboard/sign-up`);
    expect(answer?.status()).toBe(200);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByText('An operator creates one with').waitFor();
    expect(await page.getByRole('link', { name: 'Create one' }).count()).toBe(0);
    await close();
  });
});
