// What a new user meets first in the dashboard, in a real browser (chromium) against a live
// gateway on the real Redis and Postgres: sign-in lands on the organization they share (or the
// one they last used here), not on their empty personal one; a sign-out leaves no way back into
// the previous user's organization for the next one; an organization they are not in shows
// their own; and the pages say what is true in a form that reads well: the password rule before
// signing up, the per-user default a profile will get, the latest day in a chart's legend, the
// seed's top-up by the operator, an empty organization's first step, success messages that go
// with the next action, ids that do not break at their hyphens.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, sidewaysOverflow } from './support/browser.js';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import { runCliJson, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow, usageRecord } from './support/records.js';

const { env, db } = isolatedContext('dashboard-ui-newcomer');
const sinkDb = createDbPool(TEST_DATABASE_URL, 2);
const emails = { owner: uniqueEmail('newcomer-owner'), loner: uniqueEmail('newcomer-loner') };
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
let ownerPersonalOrg: string;
let lonerPersonalOrg: string;

/**
 * Signs `page` in through the form, on the page a sign-in lands on: for the tests about signing
 * in and landing. The others open their page with the owner's shared session
 * (`ui.sessions.give`: no form, no password check).
 */
async function signedIn(page: Page, email: string): Promise<void> {
  await ui.signIn(page, email);
  await page.getByRole('heading', { level: 1 }).waitFor();
}

const pathname = (page: Page): string => new URL(page.url()).pathname;

beforeAll(async () => {
  ui = await browserSuite(env, {
    gatewayEnv: { DASHBOARD_SIGNUP: 'true' },
    seed: ['--name', 'Newcomer Co'],
    users: { [emails.owner]: 'owner', [emails.loner]: null },
  });
  ({ gateway, browser, org } = ui);
  ownerPersonalOrg = ui.users[emails.owner]!.personal_org_id;
  lonerPersonalOrg = ui.users[emails.loner]!.personal_org_id;
  // a request today, for the charts
  const answer = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    { ...bearer(org.api_key), 'x-gw-external-user-id': 'dana-1' },
  );
  expect(answer.status).toBe(200);
  await ledgerRow(db, answer.headers.get('x-request-id'), 'request_id');
});

afterAll(async () => {
  await ui?.close();
  await sinkDb.end();
});

describe('signing in and out', () => {
  it('lands on the organization the user shares, then on the one they last used in this browser', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.owner);
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${org.org_id}`);
    await page.getByRole('heading', { level: 1, name: 'Newcomer Co' }).waitFor();
    await screenshot(page, 'newcomer-01-landed-on-shared-org');

    // uses their personal organization, signs out and in again: back there
    await page.getByLabel('Organization').selectOption(ownerPersonalOrg);
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${ownerPersonalOrg}`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    await signedIn(page, emails.owner);
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${ownerPersonalOrg}`);
    await close();
  });

  it('leaves no way back into the previous user’s organization after a sign-out, and shows a usable page for an organization the user is not in', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.owner);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/caps`);
    await page.getByRole('heading', { level: 1, name: 'Caps' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();
    expect(pathname(page)).toBe('/dashboard/sign-in');
    expect(new URL(page.url()).search).toBe('');
    await screenshot(page, 'newcomer-02-signed-out');

    // another user signs in here: their own organization
    await page.getByLabel('E-mail').fill(emails.loner);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${lonerPersonalOrg}`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the dashboard' }).waitFor();

    // a sign-in link that still names the first user's organization (their session ended there)
    await page.goto(
      `${gateway.url}/dashboard/sign-in?next=${encodeURIComponent(`/dashboard/orgs/${org.org_id}/caps`)}`,
    );
    await page.getByLabel('E-mail').fill(emails.loner);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${lonerPersonalOrg}`);

    // opening that organization's page: said plainly, with their own organizations at hand
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/caps`);
    await page.getByRole('heading', { level: 1, name: 'Organization not available' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    await nav.getByRole('link', { name: 'Overview' }).waitFor();
    // read once the user's organizations are listed (the navigation shows before)
    const organizations = page.getByLabel('Organization').locator('option');
    await organizations
      .filter({ hasText: /\(owner\)$/ })
      .first()
      .waitFor({ state: 'attached' });
    const options = await organizations.allTextContents();
    expect(options).toContain('Choose an organization');
    expect(options.some((option) => option.endsWith('(owner)'))).toBe(true);
    await screenshot(page, 'newcomer-03-not-a-member');
    await page.getByRole('main').getByRole('link').first().click();
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${lonerPersonalOrg}`);
    await close();
  });

  it('shows the password rule on the sign-up form before anything is sent', async () => {
    const { page, close } = await openWindow(browser);
    await page.goto(`${gateway.url}/dashboard/sign-up`);
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await page.getByText('At least 12 characters.').waitFor();
    expect(await page.getByLabel('Password').getAttribute('aria-describedby')).toBe(
      'password-rule',
    );
    await screenshot(page, 'newcomer-04-sign-up-rule');
    await close();
  });
});

describe('what the pages say', () => {
  it('points an empty organization to creating an app first', async () => {
    const { page, close } = await openWindow(browser);
    await signedIn(page, emails.loner);
    const hint = page.getByText('Nothing to show yet');
    await hint.waitFor();
    await screenshot(page, 'newcomer-05-empty-overview');
    // in a desktop window the switcher shows the whole name of their organization, with their
    // role: "<e-mail> (personal) (owner)", not cut short while the bar has room
    const switcher = page.getByLabel('Organization');
    await switcher
      .locator('option')
      .filter({ hasText: /\(owner\)$/ })
      .waitFor({ state: 'attached' });
    const room = await page.evaluate<number>(`(() => {
      const select = document.querySelector('.org-switcher select');
      const style = getComputedStyle(select);
      const context = document.createElement('canvas').getContext('2d');
      context.font = style.font;
      const text = context.measureText(select.options[select.selectedIndex].text).width;
      // the width inside its padding, less its arrow (about 1.25em)
      const inside = select.clientWidth - parseFloat(style.paddingLeft) -
        parseFloat(style.paddingRight) - 1.25 * parseFloat(style.fontSize);
      return inside - text;
    })()`);
    expect(room).toBeGreaterThanOrEqual(0);
    await page.getByRole('link', { name: 'Create an app first' }).click();
    await expect.poll(() => pathname(page)).toBe(`/dashboard/orgs/${lonerPersonalOrg}/apps`);
    await close();
  });

  it('shows the latest day in the chart legend before any hover', async () => {
    const { page, close } = await openWindow(browser);
    await ui.sessions.give(page, emails.owner);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}`);
    const legend = page.locator('.u-legend');
    await legend.waitFor();
    const today = new Date().toISOString().slice(0, 10);
    await expect.poll(() => legend.textContent()).toContain(today);
    await expect.poll(() => legend.textContent()).toMatch(/Requests\s*1$/);
    expect(await legend.textContent()).not.toContain('–');
    await screenshot(page, 'newcomer-06-overview-legend');
    await close();
  });

  it('does not say that no cap applies to a product user who has no connection yet, and a success message goes with the next action', async () => {
    const granted = await runCliJson<{ product_end_user_id: string }>(
      [
        ...['credits', 'grant', '--app-id', org.app_id, '--external-user-id', 'customer-7'],
        ...['--amount', '0.50'],
      ],
      env,
    );
    const { page, close } = await openWindow(browser);
    await ui.sessions.give(page, emails.owner);
    await page.goto(
      `${gateway.url}/dashboard/orgs/${org.org_id}/users/${granted.product_end_user_id}`,
    );
    await page.getByLabel('Amount').fill('2.25');
    await page.getByRole('button', { name: 'Grant credits…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Grant 2.25 USD' }).click();
    await page.getByText('Granted 2.25 USD.').waitFor();
    await page.getByRole('button', { name: 'Block…' }).click();
    await page.getByRole('dialog').waitFor();
    // the notice goes once the click's own handlers have run (useNotice): wait for it to go
    await page.getByText('Granted 2.25 USD.').waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Cancel' }).click();
    const allowance = page.getByRole('region', { name: 'Allowance this month' });
    await expect.poll(() => allowance.textContent()).toContain('per-user default');
    expect(await allowance.textContent()).not.toContain('No cap applies');

    await screenshot(page, 'newcomer-07-profile-after-grant');
    await close();
  });

  it('names the operator for the seed’s top-up, keeps model names and ids whole, and styles the app page’s destructive buttons alike', async () => {
    const { page, close } = await openWindow(browser, { width: 1024, height: 800 });
    await ui.sessions.give(page, emails.owner);
    // a model name with hyphens is one line, not broken after "4-"
    await page.goto(`${gateway.url}/dashboard/models`);
    const sonnet = page.getByRole('cell').locator('code', { hasText: 'claude-sonnet-4-5' });
    await sonnet.waitFor();
    // the page's script runs in the browser: it has a DOM, this file's types do not
    expect(
      await sonnet.evaluate(
        (element: unknown) =>
          (element as { getClientRects(): { length: number } }).getClientRects().length,
      ),
    ).toBe(1);
    await screenshot(page, 'newcomer-09-models');

    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/apps/${org.app_id}`);
    const revoke = page.getByRole('button', { name: 'Revoke…' });
    const remove = page.getByRole('button', { name: 'Delete app…' });
    await revoke.waitFor();
    const background = (button: typeof revoke) =>
      button.evaluate(
        (element: unknown) =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
          ).getComputedStyle(element).backgroundColor,
      );
    expect(await background(revoke)).toBe(await background(remove));
    await screenshot(page, 'newcomer-10-app');
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/wallet`);
    const history = page.getByRole('region', { name: 'Top-ups and balance changes' });
    const seeded = history.getByRole('row').filter({ hasText: '100.00 USD' }).first();
    await expect.poll(() => seeded.textContent()).toContain('the operator (CLI)');
    await screenshot(page, 'newcomer-08-wallet');

    await close();
  });
  it('keeps the overview’s spent amount and its currency inside the card at 1280 px, and shows an empty month’s 0.00 like any amount', async () => {
    // where the text of a stat card's amount (its digits and currency) ends against the card's
    // content edge, and how many lines it takes (the page's script runs in the browser: it has
    // a DOM, this file's types do not)
    type Box = { right: number; height: number };
    type Measured = {
      getBoundingClientRect(): Box;
      closest(selector: string): Measured;
      querySelector(selector: string): Measured | null;
    };
    const measure = (element: unknown) => {
      const view = globalThis as unknown as {
        getComputedStyle(target: unknown): { paddingRight: string; lineHeight: string };
        document: { createRange(): { selectNodeContents(node: unknown): void } & Measured };
      };
      const value = element as Measured;
      const card = value.closest('.stat');
      const contentRight =
        card.getBoundingClientRect().right -
        Number.parseFloat(view.getComputedStyle(card).paddingRight);
      // the text itself: the span may be narrower than what it holds
      const text = view.document.createRange();
      text.selectNodeContents(value);
      const box = text.getBoundingClientRect();
      return {
        past: box.right - contentRight,
        lines: box.height / Number.parseFloat(view.getComputedStyle(value).lineHeight),
        currency: value.querySelector('.currency') !== null,
      };
    };
    const spent = (page: Page) =>
      page.locator('.stat').filter({ hasText: 'Spent this month' }).locator('.money-value').first();

    const { page, close } = await openWindow(browser, { width: 1280, height: 860 });
    await ui.sessions.give(page, emails.owner);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}`);
    // this month's one request: an amount with 7 decimals ("0.0000108 USD") left the card by
    // 25 px in a row of five cards
    await expect.poll(() => spent(page).textContent()).toMatch(/^0\.0+[1-9]\d* USD$/);
    // polled: the amount is fitted again when its card's width changes (a scroll bar that
    // comes with the chart), in the frame after the change
    await expect.poll(async () => Math.round((await spent(page).evaluate(measure)).lines)).toBe(1);
    expect((await spent(page).evaluate(measure)).past).toBeLessThanOrEqual(0);
    await screenshot(page, 'newcomer-11-overview-1280');

    // an organization with no requests: "0.00 USD" in the same type as any other amount
    await page.getByLabel('Organization').selectOption(ownerPersonalOrg);
    await page.getByText('Nothing to show yet').waitFor();
    await expect.poll(() => spent(page).textContent()).toBe('0.00 USD');
    expect((await spent(page).evaluate(measure)).currency).toBe(true);
    await close();
  });

  it('shows a month’s spent amount as large as the counts beside it at 1280 px, inside its card', async () => {
    // an organization of the owner's that spent 12.34 USD this month, then 1,234.56 USD
    const spender = await runCliJson<SeededOrg>(['seed', '--name', 'Spender Co'], env);
    await runCliJson(
      ['admin', 'add-member', '--email', emails.owner, '--org-id', spender.org_id],
      env,
    );
    const spend = (sellCostNano: bigint) =>
      new PostgresUsageSink(sinkDb).write([
        usageRecord(spender.org_id, sellCostNano, {
          appId: spender.app_id,
          appConnectionId: spender.app_connection_id,
        }),
      ]);
    // the computed size of the spent amount and of the requests count beside it, and where
    // the amount's text ends against its card's content edge
    const sizes = (page: Page) =>
      page.locator('.stats').evaluate((stats) => {
        const view = globalThis as unknown as {
          getComputedStyle(target: unknown): { fontSize: string; paddingRight: string };
          document: {
            createRange(): {
              selectNodeContents(node: unknown): void;
              getBoundingClientRect(): { right: number };
            };
          };
        };
        type Found = { querySelector(selector: string): Found; closest(selector: string): Found };
        const cards = stats as unknown as {
          querySelectorAll(selector: string): ArrayLike<Found & { textContent: string }>;
        };
        const card = (label: string) =>
          Array.from(cards.querySelectorAll('.stat')).find((each) =>
            each.textContent.includes(label),
          )!;
        const amount = card('Spent this month').querySelector('.money-value');
        const count = card('Requests this month').querySelector('.stat-value');
        const box = card('Spent this month') as unknown as {
          getBoundingClientRect(): { right: number };
        };
        const text = view.document.createRange();
        text.selectNodeContents(amount);
        return {
          amount: Number.parseFloat(view.getComputedStyle(amount).fontSize),
          count: Number.parseFloat(view.getComputedStyle(count).fontSize),
          past:
            text.getBoundingClientRect().right -
            (box.getBoundingClientRect().right -
              Number.parseFloat(view.getComputedStyle(box).paddingRight)),
        };
      });
    const spent = (page: Page) =>
      page.locator('.stat').filter({ hasText: 'Spent this month' }).locator('.money-value');

    const { page, close } = await openWindow(browser, { width: 1280, height: 860 });
    await ui.sessions.give(page, emails.owner);
    for (const [cost, shown, name] of [
      [12_340_000_000n, '12.34 USD', 'newcomer-12-spent-12.34-1280'],
      [1_222_220_000_000n, '1,234.56 USD', 'newcomer-13-spent-1234.56-1280'],
    ] as const) {
      await spend(cost);
      await page.goto(`${gateway.url}/dashboard/orgs/${spender.org_id}`);
      await expect.poll(() => spent(page).textContent()).toBe(shown);
      // the counts' size; polled, as the amount is fitted in the frame after its card's
      // width changes (a scroll bar that comes with the chart)
      const { count } = await sizes(page);
      await expect.poll(async () => (await sizes(page)).amount, { message: shown }).toBe(count);
      expect((await sizes(page)).past, shown).toBeLessThanOrEqual(0);
      await screenshot(page, name);
    }
    await close();
  });
});

describe('large figures in stat cards (decision 403)', () => {
  /**
   * Each figure of the page's stat cards (its counts and amounts): its text, its type size
   * and the stat cards' full size (the counts' and amounts' unfitted size), and where its text ends against its card's content edge (the page's script runs in the
   * browser: it has a DOM, this file's types do not).
   */
  type Figure = { label: string; text: string; size: number; full: number; past: number };
  const figures = (page: Page): Promise<Figure[]> =>
    page.evaluate<Figure[]>(`(() => {
      const figures = [];
      for (const card of document.querySelectorAll('.stats .stat')) {
        const style = getComputedStyle(card);
        const contentRight = card.getBoundingClientRect().right - parseFloat(style.paddingRight);
        // a count's figure, or each amount's (what fits a count may sit in a span of its own)
        const counts = [...card.querySelectorAll('.stat-value:not(.money)')].map(
          (value) => value.querySelector('.count') ?? value,
        );
        for (const figure of [...counts, ...card.querySelectorAll('.money-value')]) {
          const text = document.createRange();
          text.selectNodeContents(figure);
          figures.push({
            label: card.querySelector('.stat-label').textContent,
            text: figure.textContent,
            size: parseFloat(getComputedStyle(figure).fontSize),
            full: parseFloat(getComputedStyle(figure.closest('.stat-value')).fontSize),
            past: text.getBoundingClientRect().right - contentRight,
          });
        }
      }
      return figures;
    })()`);
  /** The figures that run past their card (none, once fitted). */
  const pastTheirCards = async (page: Page): Promise<string[]> =>
    (await figures(page)).filter((figure) => figure.past > 0).map((figure) => figure.text);

  it('makes an 8-digit count smaller only as much as its card needs, at 1280 and 390 px, and keeps the other counts at full size; the usage page and the wallet fit theirs too', async () => {
    const big = await runCliJson<SeededOrg>(['seed', '--name', 'Counter Co'], env);
    await runCliJson(['admin', 'add-member', '--email', emails.owner, '--org-id', big.org_id], env);
    const whale = await runCliJson<{ product_end_user_id: string }>(
      [
        ...['credits', 'grant', '--app-id', big.app_id, '--external-user-id', 'whale'],
        ...['--amount', '987654.123456789'],
      ],
      env,
    );
    await runCliJson(
      ['wallet', 'set', '--org-id', big.org_id, '--amount', '987654.123456789'],
      env,
    );
    // this month: 12,345,678 tokens in one request, of 98,765.432109876 USD
    await new PostgresUsageSink(sinkDb).write([
      usageRecord(big.org_id, 98_765_432_109_876n, {
        appId: big.app_id,
        appConnectionId: big.app_connection_id,
        productUserId: whale.product_end_user_id,
        inputTokens: 12_345_000,
        outputTokens: 678,
      }),
    ]);
    const tokens = (all: Figure[]) => all.find((figure) => figure.text === '12,345,678');
    const requests = (all: Figure[]) => all.find((figure) => figure.label.startsWith('Requests'));

    for (const width of [1280, 390]) {
      const { page, close } = await openWindow(browser, { width, height: 860 });
      await ui.sessions.give(page, emails.owner);
      await page.goto(`${gateway.url}/dashboard/orgs/${big.org_id}`);
      await expect.poll(async () => tokens(await figures(page))?.text).toBe('12,345,678');
      // polled: fitted again in the frame after its card's width changes (the chart's scroll bar)
      await expect.poll(() => pastTheirCards(page), { message: `${width}` }).toEqual([]);
      const overview = await figures(page);
      const full = requests(overview)!.full;
      expect(requests(overview)!.size).toBe(full);
      expect(overview.find((figure) => figure.label === 'Apps')!.size).toBe(full);
      expect(tokens(overview)!.size).toBeLessThan(full);
      // made smaller only as much as it needs: still larger than the page's text
      expect(tokens(overview)!.size).toBeGreaterThan(16);
      expect(await sidewaysOverflow(page)).toBe(0);
      await screenshot(page, `newcomer-14-large-counts-overview-${width}`);

      await page.goto(`${gateway.url}/dashboard/orgs/${big.org_id}/usage`);
      await expect.poll(async () => tokens(await figures(page))?.text).toBe('12,345,678');
      await expect.poll(() => pastTheirCards(page), { message: `${width}` }).toEqual([]);
      expect(requests(await figures(page))!.size).toBe(requests(await figures(page))!.full);
      expect(await sidewaysOverflow(page)).toBe(0);
      await screenshot(page, `newcomer-15-large-figures-usage-${width}`);

      await page.goto(`${gateway.url}/dashboard/orgs/${big.org_id}/wallet`);
      await expect
        .poll(async () => (await figures(page)).map((figure) => figure.text))
        .toContain('987,654.123456789 USD');
      await expect.poll(() => pastTheirCards(page), { message: `${width}` }).toEqual([]);
      expect(await sidewaysOverflow(page)).toBe(0);
      await screenshot(page, `newcomer-16-large-figures-wallet-${width}`);

      await page.goto(
        `${gateway.url}/dashboard/orgs/${big.org_id}/users/${whale.product_end_user_id}`,
      );
      await page.getByText('987,654.123456789 USD').first().waitFor();
      expect(await sidewaysOverflow(page)).toBe(0);
      await screenshot(page, `newcomer-17-large-figures-product-user-${width}`);
      await close();
    }
  });
});

describe('the webhooks page', () => {
  it('asks for an https URL where the gateway takes no other (WEBHOOK_ALLOW_HTTP off)', async () => {
    const { page, close } = await openWindow(browser);
    await ui.sessions.give(page, emails.owner);
    await page.goto(`${gateway.url}/dashboard/orgs/${org.org_id}/webhooks`);
    await page.getByLabel('URL (https)', { exact: true }).waitFor();
    expect(await page.getByLabel(/http or https/).count()).toBe(0);
    await close();
  });
});
