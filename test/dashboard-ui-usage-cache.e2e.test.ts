// The usage page says what the prompt cache read and wrote of the input tokens, and counts the
// web searches (decision 330): in a real browser (chromium) against a live gateway, on ledger
// rows written by the usage writer, under each row's input tokens and in the totals, with a
// column of searches only while the range had any. The CSV carries the four sums. Served by an
// API older than the four sums (a rolling deploy), the page shows none of them and the CSV
// leaves their cells empty.
import { readFileSync } from 'node:fs';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { dataRows, openWindow, screenshot, statValue } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import { TEST_DATABASE_URL } from './support/env.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';
import { usageRecord } from './support/records.js';

const { env } = isolatedContext('dashboard-ui-usage-cache');
const sinkDb = createDbPool(TEST_DATABASE_URL, 2);
const email = uniqueEmail('cache-viewer');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;
const longAgo = new Date(Date.now() - 40 * 24 * 3600_000);

beforeAll(async () => {
  ui = await browserSuite(env, { seed: ['--name', 'Cache Co'], users: { [email]: 'viewer' } });
  ({ gateway, browser, org } = ui);
  const record = (model: string, sellCostNano: bigint, parts: Partial<UsageRecord>) =>
    usageRecord(org.org_id, sellCostNano, {
      createdAt: new Date(Date.now() - 3600_000),
      model,
      appConnectionId: org.app_connection_id,
      ...parts,
    });
  await new PostgresUsageSink(sinkDb).write([
    record('vendor_a/claude-haiku-4-5', 2_500_000n, {
      inputTokens: 12_000,
      outputTokens: 800,
      cacheWriteTokens: 4_000,
      cacheWrite1hTokens: 1_000,
      cacheReadTokens: 7_500,
      webSearchRequests: 3,
    }),
    record('vendor_a/claude-haiku-4-5', 1_000_000n, {
      inputTokens: 9_000,
      outputTokens: 300,
      cacheReadTokens: 8_800,
    }),
    record('vendor_b/gpt-4o-mini', 40_000n, { inputTokens: 1_500, outputTokens: 200 }),
    // outside the default range (30 days): no cache, no search
    record('vendor_b/gpt-4o-mini', 7n, { createdAt: longAgo, inputTokens: 60, outputTokens: 6 }),
  ]);
});

afterAll(async () => {
  await ui?.close();
  await sinkDb.end();
});

/** `page` signed in (a session of the file's: these tests are about a page), at `path`. */
const signedIn = (page: Page, path: string): Promise<void> =>
  ui.visit(page, email, `/dashboard/orgs/${org.org_id}${path}`);

/** The text of each cell of a table row. */
const cellsOf = (row: Locator): Promise<(string | null)[]> =>
  row.getByRole('cell').evaluateAll((found) => found.map((cell) => cell.textContent));

/** Opens the usage page by model and waits for the haiku row (two requests); returns it. */
async function haikuRowByModel(page: Page): Promise<Locator> {
  await signedIn(page, '/usage?group=model&plot=tokens');
  const haiku = dataRows(page).filter({ hasText: 'vendor_a/claude-haiku-4-5' });
  await expect.poll(() => haiku.getByRole('cell').first().textContent()).toBe('2');
  return haiku;
}

/** Clicks Export CSV; the lines of the file it downloads. */
async function exportedCsv(page: Page): Promise<string[]> {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export CSV' }).click(),
  ]);
  return readFileSync((await download.path())!, 'utf8')
    .trim()
    .split('\r\n');
}

describe('the usage page', () => {
  it('shows the cache reads and writes under the input tokens, and the web searches', async () => {
    const { page, close } = await openWindow(browser);
    const haiku = await haikuRowByModel(page);
    // requests, input tokens (and their cache parts), output tokens, web searches, cost, wallet
    expect((await cellsOf(haiku)).slice(0, 4)).toEqual([
      '2',
      '21,00016,300 cache read · 4,000 cache write (1,000 for 1 h)',
      '1,100',
      '3',
    ]);
    const mini = dataRows(page).filter({ hasText: 'vendor_b/gpt-4o-mini' });
    expect((await cellsOf(mini)).slice(0, 4)).toEqual(['1', '1,500', '200', '0']);
    await expect.poll(() => page.getByRole('columnheader', { name: 'Searches' }).count()).toBe(1);
    await expect.poll(() => statValue(page, 'Web searches')).toBe('3');
    await expect
      .poll(() => page.locator('.stat').filter({ hasText: 'of the input' }).textContent())
      .toContain('of the input: 16,300 cache read · 4,000 cache write (1,000 for 1 h)');
    await page.locator('.chart-box canvas').first().waitFor();
    await screenshot(page, 'usage-cache-01-by-model');

    const csv = await exportedCsv(page);
    expect(csv[0]).toBe(
      'model,label,currency,requests,input_tokens,output_tokens,total_tokens,cache_write_tokens,' +
        'cache_write_1h_tokens,cache_read_tokens,web_search_requests,cost,wallet_cost',
    );
    expect(csv.slice(1)).toEqual([
      'vendor_a/claude-haiku-4-5,vendor_a/claude-haiku-4-5,USD,2,21000,1100,22100,4000,1000,16300,3,0.003500000000,0.000000000000',
      'vendor_b/gpt-4o-mini,vendor_b/gpt-4o-mini,USD,1,1500,200,1700,0,0,0,0,0.000040000000,0.000000000000',
    ]);

    // A range without searches has no column for them, and input tokens without a cache part
    // no note.
    const day = longAgo.toISOString().slice(0, 10);
    await page.goto(
      `${gateway.url}/dashboard/orgs/${org.org_id}/usage?range=custom&from=${day}&through=${day}&group=model`,
    );
    const old = dataRows(page).filter({ hasText: 'vendor_b/gpt-4o-mini' });
    await expect.poll(() => old.getByRole('cell').first().textContent()).toBe('1');
    expect((await cellsOf(old)).slice(0, 4)).toEqual(['1', '60', '6', '0.000000007 USD']);
    expect(await page.getByRole('columnheader', { name: 'Searches' }).count()).toBe(0);
    await close();
  });

  it('served by an older API without the four sums, shows none of them and leaves their CSV cells empty', async () => {
    const { page, close } = await openWindow(browser);
    // The gateway's answer as a version before the cache parts and the searches gave it.
    const older = [
      'cache_write_tokens',
      'cache_write_1h_tokens',
      'cache_read_tokens',
      'web_search_requests',
    ];
    await page.route(
      (url) => url.pathname === `/dashboard/api/orgs/${org.org_id}/usage`,
      async (route) => {
        const response = await route.fetch();
        const usage = (await response.json()) as { data: Record<string, unknown>[] };
        for (const row of usage.data) for (const field of older) delete row[field];
        await route.fulfill({ response, json: usage });
      },
    );
    const haiku = await haikuRowByModel(page);
    // requests, input tokens (no cache note), output tokens, then the costs: no searches column
    expect((await cellsOf(haiku)).slice(0, 4)).toEqual(['2', '21,000', '1,100', '0.0035 USD']);
    expect(await page.getByRole('columnheader', { name: 'Searches' }).count()).toBe(0);
    expect(await page.locator('.stat').filter({ hasText: 'Web searches' }).count()).toBe(0);
    expect(await page.locator('.stat').filter({ hasText: 'of the input' }).count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toMatch(/NaN|undefined/);
    await screenshot(page, 'usage-cache-02-older-api');

    expect((await exportedCsv(page)).slice(1)).toEqual([
      'vendor_a/claude-haiku-4-5,vendor_a/claude-haiku-4-5,USD,2,21000,1100,22100,,,,,0.003500000000,0.000000000000',
      'vendor_b/gpt-4o-mini,vendor_b/gpt-4o-mini,USD,1,1500,200,1700,,,,,0.000040000000,0.000000000000',
    ]);
    await close();
  });
});
