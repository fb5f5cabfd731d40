// The account page in a browser (chromium) against a live gateway on the real Redis and
// Postgres: a password change refused for a wrong current password, then made, signs the
// other browser out while this one goes on writing (its new session's CSRF token fetched
// anew); "sign out everywhere" ends both browsers' sessions.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';

const { env, db } = isolatedContext('dashboard-ui-account');
const email = uniqueEmail('account-page');
const NEW_PASSWORD = 'the new passphrase of the account';
let ui: BrowserSuite;
let browser: Browser;
let userId: string;

beforeAll(async () => {
  ui = await browserSuite(env, { users: { [email]: null } });
  browser = ui.browser;
  userId = ui.users[email]!.id;
});

afterAll(() => ui?.close());

/** Signs in through the form (the password is what these tests change). */
const signedIn = (page: Page, password: string): Promise<void> =>
  ui.signIn(page, email, { password });

const signInPageShows = (page: Page) =>
  page.getByRole('heading', { level: 1, name: 'Sign in to the dashboard' }).waitFor();

const sessionEpoch = async (): Promise<number> =>
  (
    await db.query<{ session_epoch: number }>(
      'SELECT session_epoch FROM dashboard_users WHERE id = $1',
      [userId],
    )
  ).rows[0]!.session_epoch;

describe('the account page', () => {
  it('changes the password (signing the other browser out) and signs out everywhere', async () => {
    const here = await openWindow(browser);
    const there = await openWindow(browser);
    await signedIn(here.page, TEST_PASSWORD);
    await signedIn(there.page, TEST_PASSWORD);
    const { page } = here;

    // the user's e-mail in the top bar opens their account page
    await page.getByRole('link', { name: `Your account: ${email}` }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard/account');
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    const form = page.getByRole('form', { name: 'Change your password' });

    await form.getByLabel('Current password').fill('not the password at all');
    await form.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await form.getByLabel('New password again').fill(`${NEW_PASSWORD}!`);
    await form.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => form.getByRole('alert').textContent()).toContain('differ');

    await form.getByLabel('New password again').fill(NEW_PASSWORD);
    await form.getByRole('button', { name: 'Change password' }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toContain('current_password: wrong password');
    expect(await sessionEpoch()).toBe(0);

    await form.getByLabel('Current password').fill(TEST_PASSWORD);
    await form.getByRole('button', { name: 'Change password' }).click();
    await form
      .getByRole('status')
      .filter({ hasText: 'Password changed. 1 other browser was signed out.' })
      .waitFor();
    expect(await form.getByLabel('Current password').inputValue()).toBe('');
    expect(await sessionEpoch()).toBe(1);
    await screenshot(page, 'account-password-changed');

    // the other browser is signed out at its next request
    await there.page.reload();
    await signInPageShows(there.page);
    await signedIn(there.page, NEW_PASSWORD);

    // this one goes on, writes included (a new session, a new CSRF token)
    await page.getByRole('button', { name: 'Sign out everywhere…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Sign out of every browser?' });
    await dialog.getByRole('button', { name: 'Sign out everywhere' }).click();
    await signInPageShows(page);
    expect(await sessionEpoch()).toBe(2);
    await there.page.reload();
    await signInPageShows(there.page);
    await here.close();
    await there.close();
  });

  it('is in the navigation, also on a phone where the top bar hides the e-mail', async () => {
    const phone = await openWindow(browser, { width: 390, height: 844 });
    await signedIn(phone.page, NEW_PASSWORD);
    await phone.page
      .getByRole('navigation', { name: 'Dashboard' })
      .getByRole('link', { name: 'Your account' })
      .click();
    await phone.page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await screenshot(phone.page, 'account-phone');
    await phone.close();
  });
});
