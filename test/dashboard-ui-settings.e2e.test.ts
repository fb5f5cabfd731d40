// The organization's settings pages in a browser (chromium) against a live gateway on the real
// Redis and Postgres: a provider credential added through the vendor check (its secret never
// shown again, its fingerprint listed, the next request served with it; a policy naming a model
// the catalogue lacks, or no connection granted, stored with the API's warning shown where it
// was written, and a row granted to none marked as serving no request; its edit card
// closed with focus back on its Edit button), a webhook endpoint
// whose signing secret is shown once, a test event in its delivery log, the wallet, and an
// organization cap set in the form that makes the next inference request 403. Confirmations
// that add (a top-up, enabling) have a primary button, those that take away a red one. A viewer
// sees none of the write controls.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFIRM_COLOURS,
  confirmButtonColour,
  focusedButton,
  openWindow,
  screenshot,
  screenshotOf,
} from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import { bearer, postJson } from './support/http.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('dashboard-ui-settings');
const emails = { admin: uniqueEmail('settings-admin'), viewer: uniqueEmail('settings-viewer') };
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

/** The API's warning of a credential granted to no app connection (decision 456). */
const NO_CONNECTION =
  'the credential is granted to no app connection, so it serves no request: until a connection is granted it, requests are served without it (by gw’s own keys, paid from the wallet, unless another credential serves them)';
/** The provider credentials table's Connections column (Name, Provider, Fingerprint, …). */
const CONNECTIONS_COLUMN = 6;

async function infer(): Promise<{
  status: number;
  code?: string;
  requestId: string | null;
}> {
  const answer = await postJson<{ error?: { code: string } }>(
    `${gateway.url}/v1/chat/completions`,
    chat,
    bearer(org.api_key),
  );
  const requestId = answer.headers.get('x-request-id');
  if (answer.status === 200) await ledgerRow(db, requestId, 'request_id');
  return { status: answer.status, code: answer.body.error?.code, requestId };
}

/** `page` signed in as `email` (a session of the file's: these tests are about pages). */
async function signedIn(page: Page, email: string): Promise<void> {
  await ui.visit(page, email, `/dashboard/orgs/${org.org_id}`);
  await page.getByRole('heading', { level: 1, name: 'Settings Co' }).waitFor();
}

/** Follows a link of the navigation, and waits for its page's heading. */
async function go(page: Page, label: string, section: string, heading = label): Promise<void> {
  await page
    .getByRole('navigation', { name: 'Dashboard' })
    .getByRole('link', { name: label, exact: true })
    .click();
  const path = `/dashboard/orgs/${org.org_id}/${section}`;
  await expect.poll(() => new URL(page.url()).pathname).toBe(path);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    gatewayEnv: {
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      DASHBOARD_WALLET_TOPUP: 'true',
    },
    seed: ['--name', 'Settings Co', '--wallet', '100.00'],
    users: { [emails.admin]: 'admin', [emails.viewer]: 'viewer' },
  });
  ({ gateway, browser, org } = ui);
});

afterAll(() => ui?.close());

describe('the settings pages in a browser', () => {
  it('adds a provider credential: a refused key is not stored, an accepted one shows only its fingerprint and serves the next request', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await go(page, 'Provider credentials', 'provider-credentials');
    await page.getByText('No provider credentials yet.').waitFor();
    // focus moves to the heading at the next frame after the navigation
    await expect.poll(() => page.evaluate('document.activeElement?.tagName')).toBe('H1');

    await page.getByRole('combobox', { name: /^Provider/ }).selectOption('vendor_b');
    await page.getByLabel('Name', { exact: true }).fill('Refused key');
    await page.getByLabel('Vendor API key').fill('mock-bad-refused');
    await page.getByRole('button', { name: 'Add credential' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('gw_provider_credential_rejected');
    expect(await page.getByLabel('Vendor API key').inputValue()).toBe('');

    const secret = 'mock-ok-dashboard-ui-secret';
    await page.getByLabel('Name', { exact: true }).fill('Team key');
    await page.getByLabel('Vendor API key').fill(secret);
    await page
      .getByRole('group', { name: 'Connections it serves' })
      .getByRole('checkbox')
      .first()
      .check();
    await page.getByRole('button', { name: 'Add credential' }).click();
    const added = page.getByRole('status').filter({ hasText: 'the vendor accepted the key' });
    await added.waitFor();
    const { rows } = await db.query<{ id: string; name: string; status: string }>(
      'SELECT id, name, status FROM provider_credentials WHERE org_id = $1',
      [org.org_id],
    );
    expect(rows).toEqual([{ id: expect.any(String), name: 'Team key', status: 'active' }]);
    const fingerprint = /sha256:[0-9a-f]{16}/.exec((await added.textContent()) ?? '')?.[0];
    expect(fingerprint).toBeDefined();
    const row = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: fingerprint }) });
    await row.waitFor();
    // its routing in the words the form chose it with, not the API's value
    await row.getByRole('cell', { name: 'Your key first', exact: true }).waitFor();
    expect(await row.textContent()).not.toContain('byok_first');
    expect(await page.getByLabel('Vendor API key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(secret);
    await screenshot(page, 'settings-01-credential-added');

    const served = await infer();
    expect(served.status).toBe(200);
    const { rows: usage } = await db.query<{ route: string; credential_id: string | null }>(
      'SELECT route, credential_id FROM usage_records WHERE request_id = $1',
      [served.requestId],
    );
    expect(usage).toEqual([{ route: 'byok', credential_id: rows[0]!.id }]);

    // its priority and its name change in place (the secret cannot); a refused change's
    // message goes once the input changes
    await page.getByRole('button', { name: 'Edit Team key' }).click();
    const edit = page.getByRole('region', { name: 'Edit Team key' });
    await edit.getByLabel('Priority (1 is tried first)').fill('3');
    await edit.getByLabel('Name', { exact: true }).fill('   ');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('alert').waitFor();
    await edit.getByLabel('Name', { exact: true }).fill('Team key (EU)');
    await edit.getByRole('alert').waitFor({ state: 'detached' });
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText('Saved.', { exact: false }).waitFor();
    const { rows: edited } = await db.query<{ priority: number; name: string }>(
      'SELECT priority, name FROM provider_credentials WHERE id = $1',
      [rows[0]!.id],
    );
    expect(edited).toEqual([{ priority: 3, name: 'Team key (EU)' }]);
    await page.getByRole('cell', { name: 'Team key (EU)', exact: true }).waitFor();
    // closed: focus goes back to the Edit button that opened the card (renamed with its row)
    await edit.getByRole('button', { name: 'Close' }).click();
    await edit.waitFor({ state: 'detached' });
    await expect.poll(() => focusedButton(page)).toBe('Edit Team key (EU)');

    // disabling it (the confirmation says what happens) sends requests back to gw's route
    await page.getByRole('button', { name: 'Disable Team key (EU)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Disable Team key (EU)?' });
    expect(await dialog.textContent()).toContain('stops using the key at once');
    expect(await confirmButtonColour(dialog)).toBe(CONFIRM_COLOURS.destructive);
    await dialog.getByRole('button', { name: 'Disable credential' }).click();
    await page.getByRole('button', { name: 'Enable Team key (EU)' }).click();
    // enabling takes nothing away: its button is the primary one (cancelled here: it stays off)
    const enable = page.getByRole('dialog', { name: 'Enable Team key (EU)?' });
    expect(await confirmButtonColour(enable)).toBe(CONFIRM_COLOURS.constructive);
    await enable.getByRole('button', { name: 'Cancel' }).click();
    await enable.waitFor({ state: 'detached' });
    const { rows: after } = await db.query<{ status: string }>(
      'SELECT status FROM provider_credentials WHERE id = $1',
      [rows[0]!.id],
    );
    expect(after).toEqual([{ status: 'disabled' }]);
    await close();
  });

  it('stores a credential whose models the catalogue lacks or that no connection is granted, with the API’s warnings shown when it is added, its models changed and its last grant removed', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await go(page, 'Provider credentials', 'provider-credentials');
    const warned = (id: string) =>
      `${id} is not in the model catalogue (yet): the credential serves it once it is added`;
    const grantedTo = async (name: string) =>
      (
        await db.query<{ ids: string[] }>(
          `SELECT coalesce(array_agg(g.app_connection_id) FILTER (WHERE g.app_connection_id IS NOT NULL), '{}') AS ids
             FROM provider_credentials c
             LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
            WHERE c.org_id = $1 AND c.name = $2 GROUP BY c.id`,
          [org.org_id, name],
        )
      ).rows.map((row) => row.ids);
    const storedPolicy = async (name: string) =>
      (
        await db.query<{ model_policy: string[] }>(
          'SELECT model_policy FROM provider_credentials WHERE org_id = $1 AND name = $2',
          [org.org_id, name],
        )
      ).rows.map((row) => row.model_policy);

    // added (no connection granted: it serves nothing here) with a model not listed yet
    const form = page.getByRole('form', { name: 'Add a credential' });
    await form.getByRole('combobox', { name: /^Provider/ }).selectOption('vendor_b');
    await form.getByLabel('Name', { exact: true }).fill('Preview key');
    await form.getByLabel('Vendor API key').fill('mock-ok-preview-key');
    await form
      .getByLabel('Models it serves (empty: all of the provider’s)')
      .fill('vendor_b/gpt-4o-mini, vendor_b/gpt-next-preview');
    await form.getByRole('button', { name: 'Add credential' }).click();
    await page.getByRole('status').filter({ hasText: 'Added Preview key' }).waitFor();
    const addedWarning = page.locator('.warning[role="status"]');
    expect(await addedWarning.innerText()).toContain('Added, with 2 warnings:\n');
    // granted to no connection: it serves nothing, said first, with what to do
    expect(await addedWarning.getByRole('listitem').allTextContents()).toEqual([
      NO_CONNECTION,
      warned('vendor_b/gpt-next-preview'),
    ]);
    expect(await addedWarning.innerText()).toContain(
      'Grant it to the connections it should serve: Edit, then Connections it serves.',
    );
    // and its row in the list says so
    const previewRow = page.getByRole('row').filter({ hasText: 'Preview key' });
    expect(await previewRow.getByRole('cell').nth(CONNECTIONS_COLUMN).innerText()).toBe(
      'None: serves no request',
    );
    // a notice, not an error: stored as written
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await storedPolicy('Preview key')).toEqual([
      ['vendor_b/gpt-4o-mini', 'vendor_b/gpt-next-preview'],
    ]);
    await screenshot(page, 'settings-08-credential-policy-warning');

    // changed to two models not listed: saved, both named in the edit card
    await page.getByRole('button', { name: 'Edit Preview key' }).click();
    const edit = page.getByRole('region', { name: 'Edit Preview key' });
    const models = edit.getByLabel('Models it serves');
    await expect
      .poll(() => models.inputValue())
      .toBe('vendor_b/gpt-4o-mini, vendor_b/gpt-next-preview');
    await models.fill('vendor_b/*, vendor_b/o9, vendor_b/o9-mini');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText('Saved.', { exact: false }).waitFor();
    const savedWarning = edit.locator('.warning[role="status"]');
    expect(await savedWarning.innerText()).toContain('Saved, with 3 warnings:\n');
    expect(await savedWarning.getByRole('listitem').allTextContents()).toEqual([
      NO_CONNECTION,
      warned('vendor_b/o9'),
      warned('vendor_b/o9-mini'),
    ]);
    expect(await edit.getByRole('alert').count()).toBe(0);
    expect(await storedPolicy('Preview key')).toEqual([
      ['vendor_b/*', 'vendor_b/o9', 'vendor_b/o9-mini'],
    ]);
    await screenshotOf(edit, 'settings-09-credential-edit-warning');

    // granted to the org's connection: the grant's answer warns of nothing, the row names it
    const grants = edit.getByRole('group', {
      name: 'Connections it serves (a change applies at once)',
    });
    // (the box follows the list once reloaded: clicked, not checked)
    await grants.getByRole('checkbox').first().click();
    await expect.poll(() => grantedTo('Preview key')).toEqual([[org.app_connection_id]]);
    await expect
      .poll(() => previewRow.getByRole('cell').nth(CONNECTIONS_COLUMN).innerText())
      .not.toContain('serves no request');
    expect(await savedWarning.count()).toBe(0);

    // typing clears the notice (once the input's own handlers have run, useNotice); models the
    // catalogue lists save without a warning, now that a connection is granted
    await models.fill('vendor_b/gpt-4o-mini');
    await savedWarning.waitFor({ state: 'detached' });
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText('Saved.', { exact: false }).waitFor();
    expect(await savedWarning.count()).toBe(0);
    expect(await storedPolicy('Preview key')).toEqual([['vendor_b/gpt-4o-mini']]);

    // its last grant removed: the answer's warning is shown under the connections, and the row
    // says it serves no request again
    await grants.getByRole('checkbox').first().click();
    await expect.poll(() => grantedTo('Preview key')).toEqual([[]]);
    const ungranted = edit.locator('.warning[role="status"]');
    await ungranted.waitFor();
    expect(await ungranted.innerText()).toContain('Saved, with a warning:\n');
    expect(await ungranted.getByRole('listitem').allTextContents()).toEqual([NO_CONNECTION]);
    expect(await ungranted.innerText()).toContain(
      'Tick the connections it should serve under Connections it serves.',
    );
    await expect
      .poll(() => previewRow.getByRole('cell').nth(CONNECTIONS_COLUMN).innerText())
      .toBe('None: serves no request');
    await screenshot(page, 'settings-10-credential-no-connection');

    await edit.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => focusedButton(page)).toBe('Edit Preview key');
    await close();
  });

  it('creates a webhook endpoint whose signing secret is shown once, and queues a test event', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await go(page, 'Webhooks', 'webhooks');
    await page.getByText('No webhook endpoints yet.').waitFor();
    const url = 'http://127.0.0.1:9/gw-hooks';
    // this gateway takes http:// URLs (WEBHOOK_ALLOW_HTTP=true), and the label says so
    await page.getByLabel('URL (http or https)', { exact: true }).fill(url);
    await page.getByLabel('Description (optional)').fill('Billing service');
    // every event kind of the catalogue is offered, the newest too
    await page.getByRole('checkbox', { name: 'api_key.updated' }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const shownOnce = page.getByRole('region', { name: `Signing secret of ${url}` });
    await shownOnce.waitFor();
    expect(await shownOnce.textContent()).toContain('this is the only time it is shown');
    const secret = await shownOnce.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await screenshot(page, 'settings-02-webhook-secret');
    const { rows } = await db.query<{ id: string; url: string; event_types: string[] }>(
      'SELECT id, url, event_types FROM webhook_endpoints WHERE org_id = $1',
      [org.org_id],
    );
    expect(rows).toEqual([{ id: expect.any(String), url, event_types: ['api_key.updated'] }]);

    await shownOnce.getByRole('button', { name: /hide the secret/ }).click();
    await shownOnce.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('cell', { name: url }).first().waitFor();

    // rotating shows a new secret once; the old one keeps signing for the grace period
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
    const rotate = page.getByRole('dialog', { name: `Rotate the secret of ${url}?` });
    expect(await rotate.textContent()).toContain('keeps signing beside it for 24 hours');
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = page.getByRole('region', { name: `New signing secret of ${url}` });
    const newSecret = await rotated.getByLabel('Signing secret').inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(secret);
    await rotated.getByRole('button', { name: /hide the secret/ }).click();
    await rotated.waitFor({ state: 'detached' });
    const endpointRow = page.getByRole('row').filter({ hasText: url });
    await endpointRow.getByText('1 still signs').waitFor();

    // Two more rotations: each retired secret keeps signing until its own grace ends
    // (decision 361), and the list says until when; a fourth is refused and the dialog says why.
    for (const signing of ['2 still sign', '3 still sign']) {
      await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
      const again = page.getByRole('dialog', { name: `Rotate the secret of ${url}?` });
      expect(await again.textContent()).toContain('retired before it keep');
      await again.getByRole('button', { name: 'Rotate secret' }).click();
      const shown = page.getByRole('region', { name: `New signing secret of ${url}` });
      await shown.getByRole('button', { name: /hide the secret/ }).click();
      await shown.waitFor({ state: 'detached' });
      await endpointRow.getByText(signing).waitFor();
    }
    const stored = async () =>
      (
        await db.query<{ secret_sealed: string; earlier: number }>(
          `SELECT secret_sealed, jsonb_array_length(earlier_secrets) AS earlier
             FROM webhook_endpoints WHERE org_id = $1`,
          [org.org_id],
        )
      ).rows;
    const beforeRefusal = await stored();
    expect(beforeRefusal).toEqual([{ secret_sealed: expect.any(String), earlier: 2 }]);
    expect(await endpointRow.getByRole('listitem').count()).toBe(3);
    await screenshot(page, 'settings-10-webhook-old-secrets');
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
    const refused = page.getByRole('dialog', { name: `Rotate the secret of ${url}?` });
    expect(await refused.getByRole('note').textContent()).toContain(
      '3 old secrets already sign beside the current one',
    );
    await refused.getByRole('button', { name: 'Rotate secret' }).click();
    await refused
      .getByRole('alert')
      .getByText(/at most 3 earlier secrets sign/)
      .waitFor();
    await screenshotOf(refused, 'settings-11-webhook-rotation-refused');
    await refused.getByRole('button', { name: 'Cancel' }).click();
    await refused.waitFor({ state: 'detached' });
    expect(await stored()).toEqual(beforeRefusal);

    // A leaked secret: rotated with no grace, every old secret stops at once (the limit on
    // retired secrets does not stand in the way).
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
    const leak = page.getByRole('dialog', { name: `Rotate the secret of ${url}?` });
    await leak
      .getByLabel('The old secret keeps signing for')
      .selectOption({ label: 'Not at all: the old secret has leaked' });
    await expect.poll(() => leak.textContent()).toContain('every old secret stops at once');
    await expect
      .poll(() => leak.getByRole('note').textContent())
      .toContain('All 3 old secrets that still sign stop too.');
    await screenshotOf(leak, 'settings-12-webhook-rotation-leaked');
    await leak.getByRole('button', { name: 'Rotate secret' }).click();
    const afterLeak = page.getByRole('region', { name: `New signing secret of ${url}` });
    await afterLeak.getByRole('button', { name: /hide the secret/ }).click();
    await afterLeak.waitFor({ state: 'detached' });
    await expect.poll(async () => endpointRow.getByText(/still sign/).count()).toBe(0);
    const afterLeakRows = await db.query<{ earlier: number; previous: string | null }>(
      `SELECT jsonb_array_length(earlier_secrets) AS earlier, previous_secret_sealed AS previous
         FROM webhook_endpoints WHERE org_id = $1`,
      [org.org_id],
    );
    expect(afterLeakRows.rows).toEqual([{ earlier: 0, previous: null }]);

    await page.getByRole('button', { name: `Send test to ${url}` }).click();
    await page.getByText(/Test event msg_\w+ queued/).waitFor();
    await page.getByRole('button', { name: `Deliveries of ${url}` }).click();
    const log = page.getByRole('region', { name: `Deliveries to ${url}` });
    await log.getByRole('cell', { name: /webhook\.test/ }).waitFor();
    await screenshot(page, 'settings-03-webhook-deliveries');
    await close();
  });

  it('shows the wallet, and sets an organization cap that refuses the next request with 403', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    expect((await infer()).status).toBe(200);
    await go(page, 'Wallet', 'wallet');
    await page.getByText('Held by requests in flight').waitFor();
    // the seeded 100.00 USD is in the history
    await page
      .getByRole('region', { name: 'Top-ups and balance changes' })
      .getByRole('cell', { name: '100.00 USD' })
      .waitFor();
    // a top-up asks first, then shows in the history and in Postgres
    await page.getByLabel('Amount (USD)').fill('25.50');
    await page.getByRole('button', { name: 'Top up…' }).click();
    const topUp = page.getByRole('dialog', { name: 'Add 25.50 USD to the wallet?' });
    expect(await topUp.textContent()).toContain('The balance grows by this amount at once');
    // adding money: the primary button, not a red one
    expect(await confirmButtonColour(topUp)).toBe(CONFIRM_COLOURS.constructive);
    await topUp.getByRole('button', { name: 'Add funds' }).click();
    await page.getByText('Added 25.50 USD.').waitFor();
    await page
      .getByRole('region', { name: 'Top-ups and balance changes' })
      .getByRole('cell', { name: '25.50 USD' })
      .waitFor();
    const { rows: topUps } = await db.query<{ amount: string }>(
      "SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' ORDER BY id DESC LIMIT 1",
      [org.org_id],
    );
    expect(topUps).toEqual([{ amount: '25.500000000000' }]);
    await page.getByLabel(/Alert below/).fill('5.00');
    await page.getByRole('button', { name: 'Set alert' }).click();
    await page.getByText(/falls below\s*5\.00 USD/).waitFor();
    await screenshot(page, 'settings-04-wallet');

    await go(page, 'Caps', 'caps');
    await page.getByText('The organization has no cap.').waitFor();
    // a cap of 0 stops every request: that asks first
    await page.getByLabel('Monthly cap (USD)').first().fill('0');
    await page.getByRole('button', { name: 'Set organization cap' }).click();
    const stopAll = page.getByRole('dialog', { name: 'Set the organization cap to 0?' });
    expect(await stopAll.textContent()).toContain('is refused with 403');
    await stopAll.getByRole('button', { name: 'Stop all requests' }).click();
    await page.getByText(/Cap:\s*0\.00 USD a month/).waitFor();
    await screenshot(page, 'settings-05-caps');
    const refused = await infer();
    expect(refused).toMatchObject({ status: 403, code: 'gw_cap_exceeded' });

    // the overview reads the cap and the wallet from their APIs
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}`);
    const caps = page.getByRole('region', { name: 'Spend against caps' });
    await expect.poll(() => caps.textContent()).toContain('organization cap this month');
    await page.getByRole('region', { name: 'Wallet balance' }).getByText('available').waitFor();
    await screenshot(page, 'settings-06-overview');

    // a connection's per-user default and settings
    await go(page, 'Caps', 'caps');
    await page.getByLabel('Per-user default cap (USD, empty: none)').fill('0.50');
    await page.getByRole('combobox', { name: /^Credit mode/ }).selectOption('track_only');
    await page.getByRole('button', { name: 'Save connection cap' }).click();
    await page.getByText(/Per-user default:\s*0\.50 USD a month/).waitFor();
    const { rows: connectionCaps } = await db.query(
      `SELECT r.amount::text, r.per_user_amount::text, c.credit_mode
         FROM cap_rules r JOIN app_connections c ON c.id = r.app_connection_id
        WHERE r.app_connection_id = $1 AND r.status = 'active'`,
      [org.app_connection_id],
    );
    expect(connectionCaps).toEqual([
      { amount: null, per_user_amount: '0.500000000000', credit_mode: 'track_only' },
    ]);

    // removing the org cap (after a confirmation) lets requests through again
    await page.getByRole('button', { name: 'Remove cap…' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Remove the organization cap?' });
    await dialog.getByRole('button', { name: 'Remove cap' }).click();
    await page.getByText('The organization has no cap.').waitFor();
    expect((await infer()).status).toBe(200);

    // a cap below what the month has spent is saved, and the page says it refuses everything
    // (decision 481); editing the amount again takes the warning away
    await page.getByLabel('Monthly cap (USD)').first().fill('0.000000001');
    await page.getByRole('button', { name: 'Set organization cap' }).click();
    const warning = page.getByRole('region', { name: 'Organization cap' }).getByRole('status');
    await expect
      .poll(() => warning.textContent())
      .toMatch(
        /^Saved, with a warning:the cap \(0\.000000001000 USD\) is not above what the organization has spent this period \(\d+\.\d{12} USD\): every request under it is refused until the month turns or the cap is raisedRaise the cap \(or remove it\) to let requests through again\.$/,
      );
    await screenshotOf(
      page.getByRole('region', { name: 'Organization cap' }),
      'settings-07-cap-used-up',
    );
    expect((await infer()).status).toBe(403);
    await page.getByLabel('Monthly cap (USD)').first().fill('100');
    await expect.poll(() => warning.count()).toBe(0);
    await page.getByRole('button', { name: 'Remove cap…' }).first().click();
    await dialog.getByRole('button', { name: 'Remove cap' }).click();
    await page.getByText('The organization has no cap.').waitFor();
    await close();
  });

  it('registers an OAuth client on the app page with its secret shown once, and lists no connected app yet', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await go(page, 'Apps & connections', 'apps', 'Apps');
    await page.getByRole('link', { name: 'Seeded app' }).click();
    await page.getByRole('heading', { name: 'OAuth clients' }).waitFor();
    await page.getByText('No OAuth clients for this app.').waitFor();
    await page.getByLabel('Client name').fill('Partner portal');
    await page.getByLabel('Redirect URIs (one a line)').fill('https://partner.example/callback');
    await page.getByRole('button', { name: 'Register OAuth client' }).click();
    const shownOnce = page.getByRole('region', { name: 'Client secret of Partner portal' });
    await shownOnce.waitFor();
    const secret = await shownOnce.getByLabel('Client secret').inputValue();
    expect(secret.length).toBeGreaterThan(20);
    await screenshot(page, 'settings-07-oauth-client');
    const { rows } = await db.query<{ name: string; client_secret_hash: string }>(
      'SELECT name, client_secret_hash FROM oauth_clients WHERE app_id = $1',
      [org.app_id],
    );
    expect(rows).toEqual([{ name: 'Partner portal', client_secret_hash: expect.any(String) }]);
    expect(rows[0]!.client_secret_hash).not.toContain(secret);
    await shownOnce.getByRole('button', { name: /hide the secret/ }).click();
    await shownOnce.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('cell', { name: 'Partner portal', exact: true }).waitFor();

    await go(page, 'Connected apps', 'connected-apps');
    await page.getByText('No app is connected to this organization.').waitFor();
    await close();
  });

  it('shows a viewer the settings without a control to change them', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.viewer);
    await go(page, 'Caps', 'caps');
    await page.getByRole('heading', { name: 'Organization cap' }).waitFor();
    await page.getByText('The organization has no cap.').waitFor();
    expect(
      await page.getByRole('button', { name: /^(Set .*cap|Save .*cap|Remove cap)/ }).count(),
    ).toBe(0);
    await go(page, 'Provider credentials', 'provider-credentials');
    await page.getByRole('cell', { name: 'Team key' }).waitFor();
    expect(
      await page.getByRole('button', { name: /Add credential|Disable|Enable|Delete|Edit/ }).count(),
    ).toBe(0);
    await go(page, 'Wallet', 'wallet');
    await page.getByText('Held by requests in flight').waitFor();
    expect(await page.getByRole('button', { name: /Top up|Set alert/ }).count()).toBe(0);
    await go(page, 'Webhooks', 'webhooks');
    await page.getByText('Only admins and owners').waitFor();
    await close();
  });

  it('keeps keyboard focus on a form’s button, and what was typed, when what it sent is refused', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.admin);
    await go(page, 'Webhooks', 'webhooks');
    await page.getByLabel('URL (http or https)', { exact: true }).fill('ftp://example.com/hook');
    await page.getByLabel('Description (optional)').fill('Refused');
    // a keyboard user: on the button, Enter
    const add = page.getByRole('button', { name: 'Add endpoint' });
    await add.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'gw_webhook_url_not_allowed' }).waitFor();
    // the button, disabled while the form was sent, has focus again: Tab goes on from there
    await expect.poll(() => focusedButton(page)).toBe('Add endpoint');
    expect(await page.getByLabel('URL (http or https)', { exact: true }).inputValue()).toBe(
      'ftp://example.com/hook',
    );
    await screenshot(page, 'settings-10-refused-focus-kept');
    await close();
  });
});
