// "Forgot password?" and address verification in the dashboard (chromium) against a live
// gateway that sends e-mail to a real SMTP server (smtp-server), on the real Redis and
// Postgres (decision 370): from the sign-in page to the mailed link, a new password, and
// signing in with it; and a sign-up's banner until its verification link is followed.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, requestsSent, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { linkToken, startMailCatcher, type MailCatcher } from './support/mail-catcher.js';
import { runCli, type GatewayProcess } from './support/processes.js';
import { freePort } from './support/services.js';

const { env } = isolatedContext('dashboard-ui-forgot-password', { ownDatabase: true });
const NEW_PASSWORD = 'a brand new passphrase, long enough';
let mail: MailCatcher;
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;

beforeAll(async () => {
  mail = await startMailCatcher();
  const port = await freePort();
  ui = await browserSuite(env, {
    gatewayEnv: {
      PORT: String(port),
      DASHBOARD_SIGNUP: 'true',
      SMTP_URL: mail.url,
      EMAIL_FROM: 'gw <no-reply@gw.example.test>',
      PUBLIC_ORIGIN: `http://127.0.0.1:${port}`,
    },
  });
  ({ gateway, browser } = ui);
});

afterAll(async () => {
  await ui?.close();
  await mail?.close();
});

describe('forgot password in the dashboard', () => {
  it('goes from the sign-in page to the mailed link, a new password, and a sign-in with it', async () => {
    const email = uniqueEmail('Forgetful').toLowerCase();
    const created = await runCli(
      ['admin', 'create-user', '--email', email, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    expect(created.code).toBe(0);
    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/`);
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await screenshot(page, 'forgot-password-01-sign-in');
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/forgot-password');
    await page.getByLabel('E-mail').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('status').filter({ hasText: 'is on its way' }).waitFor();
    await screenshot(page, 'forgot-password-02-link-sent');

    const { link } = linkToken((await mail.nth(email, 1)).text, 'password_reset_token');
    expect(link.startsWith(`${gateway.url}/dashboard/#password_reset_token=`)).toBe(true);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    // the token left the address bar (and so the history) as the page loaded
    expect(page.url()).not.toContain('password_reset_token');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill('not the same passphrase at all');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('differ');
    await page.getByLabel('New password again').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('status').filter({ hasText: 'is reset' }).waitFor();
    await screenshot(page, 'forgot-password-03-reset');

    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('gw_invalid_credentials');
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByRole('heading', { level: 1 }).waitFor();
    await screenshot(page, 'forgot-password-04-signed-in');
    await close();
  });

  it("shows a sign-up's unverified address in a banner, with resend, until its link is followed", async () => {
    const email = uniqueEmail('Newcomer').toLowerCase();
    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/sign-up`);
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    const banner = page.getByRole('region', { name: 'Verify your e-mail address' });
    await banner.waitFor();
    expect(await banner.textContent()).toContain(email);
    await banner.getByRole('button', { name: 'Send the link again' }).click();
    await banner.getByText('A new link is on its way.').waitFor();
    await screenshot(page, 'verify-email-01-banner');
    const { link } = linkToken((await mail.nth(email, 2)).text, 'email_verification_token');
    await page.goto(link);
    await page.getByText(`Your e-mail address ${email} is verified.`).waitFor();
    // the session is read again after the link is followed: the banner goes
    await page
      .getByRole('region', { name: 'Verify your e-mail address' })
      .waitFor({ state: 'detached' });
    await screenshot(page, 'verify-email-02-verified');
    await close();
  });

  it('follows a link opened while signed out once: signing in after it shows no banner and no error', async () => {
    const email = uniqueEmail('Elsewhere').toLowerCase();
    const signUp = await openWindow(browser);
    await signUp.page.goto(`${gateway.url}/dashboard/sign-up`);
    await signUp.page.getByLabel('E-mail').fill(email);
    await signUp.page.getByLabel('Password').fill(TEST_PASSWORD);
    await signUp.page.getByRole('button', { name: 'Create account' }).click();
    await signUp.page.getByRole('region', { name: 'Verify your e-mail address' }).waitFor();
    await signUp.close();

    // another browser (the phone the mail was read on): no session there
    const { page, close } = await openWindow(browser);
    const verifications = requestsSent(page, 'POST', /\/auth\/verify-email$/);
    const { link } = linkToken((await mail.nth(email, 1)).text, 'email_verification_token');
    await page.goto(link);
    await page.getByText(`Your e-mail address ${email} is verified.`).waitFor();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByText(`Your e-mail address ${email} is verified.`).waitFor();
    expect(await page.getByRole('region', { name: 'Verify your e-mail address' }).count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(verifications.length).toBe(1);
    await screenshot(page, 'verify-email-03-signed-in-after-link');
    await close();
  });
});
