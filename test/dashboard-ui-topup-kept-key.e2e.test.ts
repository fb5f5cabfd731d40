// The dashboard keeps a create's Idempotency-Key whenever an earlier send of the submission may
// have taken effect (decision 559), in a real browser against a started gateway. The first
// "Add funds" tops the wallet up and its answer is lost; the retry is answered by a gateway of
// the previous version during a rolling deploy — 409 gw_conflict without Retry-After ("committed
// its change, then failed before answering") — or by a 500; the admin clicks once more. That
// third send must carry the first key (the gateway replays the top-up), not a new one (a
// second top-up). The previous version's answers are played by the page's network layer: the
// gateway under test answers them only in states a test cannot reach from the page.
import type { Page, Request, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, type BrowserWindow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';

const { env, db } = isolatedContext('dash-ui-topup-key');
const admin = uniqueEmail('ui-topup-key');
let ui: BrowserSuite;
let window: BrowserWindow;
let page: Page;
let orgId: string;

beforeAll(async () => {
  ui = await browserSuite(env, {
    gatewayEnv: { DASHBOARD_WALLET_TOPUP: 'true' },
    seed: ['--name', 'Kept Key Co', '--wallet', '100.00'],
    users: { [admin]: 'admin' },
  });
  orgId = ui.org.org_id;
  window = await openWindow(ui.browser);
  page = window.page;
});

afterAll(async () => {
  await window?.close();
  await ui?.close();
});

async function topUps(amount: string): Promise<number> {
  const { rows } = await db.query(
    `SELECT 1 FROM wallet_transactions WHERE org_id = $1 AND kind = 'topup' AND amount = $2`,
    [orgId, amount],
  );
  return rows.length;
}

/**
 * Tops up `amount` from the wallet page: the first send's answer is lost (the gateway made
 * it), the second is answered `second`, the third goes to the gateway. The page's sends.
 */
async function topUpAnsweredBy(
  amount: string,
  second: (route: Route) => Promise<void>,
  secondSays: string,
): Promise<Request[]> {
  const path = `/dashboard/api/orgs/${orgId}/wallet/top-ups`;
  await ui.visit(page, admin, `/dashboard/orgs/${orgId}/wallet`);
  const sends: Request[] = [];
  const onRequest = (request: Request): void => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === path) {
      sends.push(request);
    }
  };
  page.on('request', onRequest);
  let send = 0;
  await page.route(`**${path}`, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    send += 1;
    if (send === 1) {
      await route.fetch();
      return route.abort('failed');
    }
    if (send === 2) return second(route);
    return route.continue();
  });
  try {
    await page.getByLabel('Amount (USD)').fill(amount);
    await page.getByRole('button', { name: 'Top up…' }).click();
    const dialog = page.getByRole('dialog', { name: `Add ${amount} USD to the wallet?` });
    const addFunds = dialog.getByRole('button', { name: 'Add funds' });
    await addFunds.click();
    await dialog.getByText('The gateway could not be reached.').waitFor();
    expect(await topUps(amount)).toBe(1);
    await addFunds.click();
    await dialog.getByText(secondSays).waitFor();
    await addFunds.click();
    await page.getByText(`Added ${amount} USD.`).waitFor();
  } finally {
    page.off('request', onRequest);
    await page.unrouteAll();
  }
  return sends;
}

describe('a dashboard top-up whose answer was lost', () => {
  it('told 409 without Retry-After by a gateway of the previous version keeps its key: one top-up', async () => {
    const message =
      'the first request with this Idempotency-Key committed its change, then failed before answering; check what it made, then use a new key';
    const sends = await topUpAnsweredBy(
      '7.25',
      (route) =>
        route.fulfill({
          status: 409,
          contentType: 'application/json',
          body: JSON.stringify({ error: { code: 'gw_conflict', message } }),
        }),
      'committed its change, then failed before answering',
    );
    expect(sends).toHaveLength(3);
    const keys = sends.map((send) => send.headers()['idempotency-key']);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).toBe(keys[0]);
    const third = await sends[2]!.response();
    expect(third?.status()).toBe(201);
    expect(third?.headers()['idempotent-replayed']).toBe('true');
    expect(await topUps('7.25')).toBe(1);
  });

  it('answered 500 keeps its key: one top-up', async () => {
    const sends = await topUpAnsweredBy(
      '3.50',
      (route) =>
        route.fulfill({
          status: 500,
          contentType: 'application/json',
          body: JSON.stringify({
            error: { code: 'gw_internal_error', message: 'internal error (request id x)' },
          }),
        }),
      'internal error',
    );
    expect(sends).toHaveLength(3);
    expect(sends[2]!.headers()['idempotency-key']).toBe(sends[0]!.headers()['idempotency-key']);
    expect((await sends[2]!.response())?.headers()['idempotent-replayed']).toBe('true');
    expect(await topUps('3.50')).toBe(1);
  });
});
