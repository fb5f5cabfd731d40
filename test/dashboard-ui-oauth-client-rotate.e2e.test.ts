// Rotating an OAuth client's secret on the app page, in a browser (chromium) against a live
// gateway on the real Postgres (decision 374): the dialog offers the webhook rotate dialog's
// grace choices (decision 371), the new secret is shown once, the list says until when the old
// one works, "Not at all" stops every old secret; a public client and a viewer get no button.
import type { Browser, Page } from 'playwright-core';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, screenshotOf } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import { createOAuthClient, type RegisteredClient } from './support/oauth.js';
import type { SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('dashboard-ui-oauth-rotate');
const emails = { admin: uniqueEmail('rotate-admin'), viewer: uniqueEmail('rotate-viewer') };
let ui: BrowserSuite;
let browser: Browser;
let org: SeededOrg;
let confidential: RegisteredClient;
let publicClient: RegisteredClient;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** `page` signed in as `email` (a session of the file's: these tests are about a page). */
async function openApp(page: Page, email: string): Promise<void> {
  await ui.visit(page, email, `/dashboard/orgs/${org.org_id}/apps/${org.app_id}`);
  await page.getByRole('heading', { level: 2, name: 'OAuth clients' }).waitFor();
  await page.getByRole('cell', { name: confidential.client_id }).waitFor();
}

async function stored(): Promise<{ hash: string; retired: { hash: string }[] }> {
  const { rows } = await db.query<{ hash: string; retired: { hash: string }[] }>(
    'SELECT client_secret_hash AS hash, retired_secrets AS retired FROM oauth_clients WHERE id = $1',
    [confidential.client_id],
  );
  return rows[0]!;
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Rotate Co'],
    users: { [emails.admin]: 'admin', [emails.viewer]: 'viewer' },
  });
  ({ browser, org } = ui);
  confidential = await createOAuthClient(env, org.app_id, ['http://127.0.0.1:9/cb'], {
    name: 'Web app',
  });
  publicClient = await createOAuthClient(env, org.app_id, ['http://127.0.0.1:9/cb'], {
    name: 'Phone app',
    public: true,
  });
});

afterAll(() => ui?.close());

describe('the OAuth client rotate dialog', () => {
  it('rotates with the grace chosen, shows the new secret once, and a leaked secret stops every old one', async () => {
    const { page, close } = await openWindow(browser);
    await openApp(page, emails.admin);
    // a public client has no secret to rotate
    await page.getByRole('cell', { name: publicClient.client_id }).waitFor();
    expect(
      await page.getByRole('button', { name: 'Rotate secret of OAuth client Phone app' }).count(),
    ).toBe(0);

    await screenshotOf(
      page.getByRole('region', { name: 'OAuth clients' }),
      'oauth-rotate-00-clients',
    );
    await page.getByRole('button', { name: 'Rotate secret of OAuth client Web app' }).click();
    const dialog = page.getByRole('dialog', {
      name: 'Rotate the secret of OAuth client Web app?',
    });
    const grace = dialog.getByLabel('The old secret keeps working for');
    // evaluateAll does not wait: the dialog opens on the click's next render
    await grace.waitFor();
    expect(
      await grace
        .locator('option')
        .evaluateAll((options) =>
          options.map((option) => (option as unknown as { textContent: string }).textContent),
        ),
    ).toEqual([
      '24 hours (the default)',
      '1 hour',
      '7 days',
      'Not at all: the old secret has leaked',
    ]);
    expect(await dialog.textContent()).toContain('keeps working beside it for 24 hours');
    await grace.selectOption({ label: '1 hour' });
    expect(await dialog.textContent()).toContain('keeps working beside it for 1 hour');
    expect(await dialog.textContent()).toContain('their tokens keep working');
    await screenshotOf(dialog, 'oauth-rotate-01-dialog');
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();

    const shown = page.getByRole('region', { name: 'New client secret of Web app' });
    const newSecret = await shown.getByLabel('Client secret').inputValue();
    expect(newSecret).toMatch(/^gw_client_secret_[0-9A-Za-z]{43}$/);
    expect(newSecret).not.toBe(confidential.client_secret);
    const afterFirst = await stored();
    expect(afterFirst.hash).toBe(sha256(newSecret));
    expect(afterFirst.retired.map((retired) => retired.hash)).toEqual([
      sha256(confidential.client_secret!),
    ]);
    const { rows: grace1h } = await db.query<{ seconds: number }>(
      `SELECT round(extract(epoch FROM (retired_secrets->0->>'expires_at')::timestamptz - now()))::int
              AS seconds FROM oauth_clients WHERE id = $1`,
      [confidential.client_id],
    );
    expect(grace1h[0]!.seconds).toBeGreaterThan(3000);
    expect(grace1h[0]!.seconds).toBeLessThanOrEqual(3600);
    await screenshot(page, 'oauth-rotate-02-new-secret');
    await shown.getByRole('button', { name: /hide the secret/ }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(newSecret);
    const row = page.getByRole('row').filter({ hasText: confidential.client_id });
    await row.getByText(/an old secret works until/).waitFor();
    expect(await row.textContent()).toContain(newSecret.slice(0, 21));

    // the secret leaked: no grace, and the old secret still working stops too
    await page.getByRole('button', { name: 'Rotate secret of OAuth client Web app' }).click();
    const leak = page.getByRole('dialog', { name: 'Rotate the secret of OAuth client Web app?' });
    expect(await leak.textContent()).toContain('The secret retired before it keeps working');
    await leak
      .getByLabel('The old secret keeps working for')
      .selectOption({ label: 'Not at all: the old secret has leaked' });
    expect(await leak.textContent()).toContain('every old secret stops at once');
    expect(await leak.getByRole('note').textContent()).toContain(
      'The old secret that still works stops too.',
    );
    await screenshotOf(leak, 'oauth-rotate-03-leaked');
    await leak.getByRole('button', { name: 'Rotate secret' }).click();
    const leakedShown = page.getByRole('region', { name: 'New client secret of Web app' });
    const leakedSecret = await leakedShown.getByLabel('Client secret').inputValue();
    expect(leakedSecret).not.toBe(newSecret);
    await leakedShown.getByRole('button', { name: /hide the secret/ }).click();
    await leakedShown.waitFor({ state: 'detached' });
    await expect.poll(() => row.getByText(/an old secret works until/).count()).toBe(0);
    expect(await stored()).toEqual({ hash: sha256(leakedSecret), retired: [] });
    await close();
  });

  it('a viewer sees the clients but no rotate button', async () => {
    const { page, close } = await openWindow(browser);
    await openApp(page, emails.viewer);
    expect(await page.getByRole('button', { name: /^Rotate secret of/ }).count()).toBe(0);
    await close();
  });
});
