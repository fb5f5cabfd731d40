// A real browser for end-to-end tests: Debian's chromium driven by playwright-core (no browser
// download: .ci/run installs chromium with apt). Each launch gets a fresh profile directory
// (playwright-core makes a temporary --user-data-dir and deletes it on close).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Screenshots land here (gitignored), to be looked at after a run. */
export const SCREENSHOT_DIR = fileURLToPath(
  new URL('../../test-results/dashboard/', import.meta.url),
);

export interface LaunchedBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<LaunchedBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    timeout: 30_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}
