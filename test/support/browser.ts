// A real browser for end-to-end tests: Debian's chromium driven by playwright-core (no browser
// download: .ci/run installs chromium with apt). Each launch gets a fresh profile directory
// (playwright-core makes a temporary --user-data-dir and deletes it on close).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
} from 'playwright-core';
import { expect } from 'vitest';
import { DashboardClient } from './dashboard.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Screenshots land here (gitignored), to be looked at after a run; DASHBOARD_SCREENSHOT_DIR
 * puts them elsewhere (outside the checkout).
 */
export const SCREENSHOT_DIR =
  process.env.DASHBOARD_SCREENSHOT_DIR ??
  fileURLToPath(new URL('../../test-results/dashboard/', import.meta.url));

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

let workerBrowser: Promise<Browser> | undefined;

/**
 * The browser of this test worker: launched by the first file that asks for it and kept for
 * the files the worker runs after it (one process runs them, `isolate: false` in
 * vitest.config.ts), as one browser outlives the sites it visits. Files share no state through
 * it: each window is a fresh context (its own cookies, storage and cache). A browser that
 * crashed is launched anew; playwright kills the last one as the worker exits.
 */
export function sharedBrowser(): Promise<Browser> {
  if (!workerBrowser) {
    const launching = launchBrowser().then(({ browser }) => {
      browser.once('disconnected', () => {
        if (workerBrowser === launching) workerBrowser = undefined;
      });
      return browser;
    });
    launching.catch(() => {
      if (workerBrowser === launching) workerBrowser = undefined;
    });
    workerBrowser = launching;
  }
  return workerBrowser;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/**
 * A screenshot of one part of the page (a long page's full screenshot is too tall to read).
 * A part drawn again between being found and being shot (its data loaded once more: the
 * element replaced by its like) is found anew and shot once more: a screenshot asserts nothing.
 */
export async function screenshotOf(part: Locator, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await part.screenshot({ path }).catch(async (error: unknown) => {
    if (!(error instanceof Error) || !error.message.includes('not attached to the DOM'))
      throw error;
    await part.screenshot({ path });
  });
}

export interface BrowserWindow {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Closes the window; fails the test if the page threw or the browser blocked anything. */
  close(): Promise<void>;
}

/**
 * A fresh browser window (its own cookies), as on a desktop or a phone. Closing it checks that
 * the page threw no error and the browser blocked nothing under the Content-Security-Policy.
 */
export async function openWindow(
  browser: Browser,
  viewport = { width: 1280, height: 860 },
): Promise<BrowserWindow> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) problems.push(message.text());
  });
  return {
    page,
    context,
    async close() {
      await context.close();
      expect(problems).toEqual([]);
    },
  };
}

/**
 * The sessions of a test file's dashboard users, each signed in once through the API (one
 * password check per user, not one per window or API client), for tests about a page rather
 * than about signing in: a window given one skips the sign-in form, its password check and the
 * landing page. The sign-in form has tests of its own (test/dashboard-ui.e2e.test.ts and
 * others). Nothing that ends a session (signing out, a password change) may use one.
 */
export class SharedSessions {
  private readonly clients = new Map<string, Promise<DashboardClient>>();

  constructor(
    /** The gateway's plain-HTTP URL (its cookies need DASHBOARD_INSECURE_COOKIES there). */
    private readonly gatewayUrl: string,
    private readonly password: string,
  ) {}

  /** Puts `email`'s session cookie in `page`'s window, as a browser keeps it after signing in. */
  async give(page: Page, email: string): Promise<void> {
    const { cookie } = await this.client(email);
    if (!cookie) throw new Error(`the session of ${email} has ended`);
    const separator = cookie.indexOf('=');
    await page.context().addCookies([
      {
        name: cookie.slice(0, separator),
        value: cookie.slice(separator + 1),
        url: this.gatewayUrl,
        httpOnly: true,
        sameSite: 'Lax',
      },
    ]);
  }

  /**
   * An API client in `email`'s session (the one its windows get), with its CSRF token, sending
   * the gateway's own plain-HTTP Origin as a browser on the dashboard would.
   */
  client(email: string): Promise<DashboardClient> {
    let client = this.clients.get(email);
    if (!client) {
      client = (async () => {
        const signedIn = new DashboardClient(this.gatewayUrl, this.gatewayUrl);
        const answer = await signedIn.login(email, this.password);
        if (answer.status !== 200 || !signedIn.cookie)
          throw new Error(`sign-in of ${email} answered ${answer.status}`);
        return signedIn;
      })();
      this.clients.set(email, client);
    }
    return client;
  }
}

/** Fills in and sends the dashboard's sign-in form. */
export async function signIn(
  page: Page,
  gatewayUrl: string,
  email: string,
  password: string,
): Promise<void> {
  await page.goto(`${gatewayUrl}/dashboard/`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The page's scroll width beyond its viewport (0: nothing sticks out sideways). */
export const sidewaysOverflow = (page: Page): Promise<number> =>
  // the page's own script runs in the browser: it has a document, this file's types do not
  page.evaluate<number>(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  );

/** One pixel of the window as drawn, [red, green, blue]: a 1×1 screenshot, decoded. */
export async function pixelAt(page: Page, x: number, y: number): Promise<number[]> {
  const png = await page.screenshot({ clip: { x, y, width: 1, height: 1 } });
  const data: Buffer[] = [];
  // chunks after the 8-byte signature: length, type, data, CRC
  for (let at = 8; at < png.length; at += 12 + png.readUInt32BE(at)) {
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') {
      data.push(png.subarray(at + 8, at + 8 + png.readUInt32BE(at)));
    }
  }
  // one row of one 8-bit pixel: its filter byte, whatever the filter, adds nothing to it
  return [...inflateSync(Buffer.concat(data)).subarray(1, 4)];
}

/**
 * How dark a sideways scroller is drawn just inside its left and right edges, half-way down,
 * with its content hidden: 0 where its plain background shows, more where a shadow says there
 * is more to scroll to on that side.
 */
export async function edgeShades(box: Locator): Promise<{ left: number; right: number }> {
  const showContent = (shown: boolean) =>
    box.evaluate((element, visible) => {
      for (const child of element.children) {
        (child as typeof element).style.visibility = visible ? '' : 'hidden';
      }
    }, shown);
  await showContent(false);
  const edges = (await box.boundingBox())!;
  const middle = Math.round(edges.y + edges.height / 2);
  const shade = async (x: number) =>
    255 - Math.min(...(await pixelAt(box.page(), Math.round(x), middle)));
  const shades = { left: await shade(edges.x + 2), right: await shade(edges.x + edges.width - 3) };
  await showContent(true);
  return shades;
}

/** The figure of the overview's (or usage page's) stat card labelled `label`. */
export const statValue = (page: Page, label: string | RegExp): Promise<string | null> =>
  page
    .locator('.stat')
    .filter({ has: page.locator('.stat-label', { hasText: label }) })
    .locator('.stat-value')
    .textContent();

/**
 * The rows of the page's data tables, not of a chart's legend (uPlot draws its legend as a
 * table whose row names the hovered, or the latest, group: it would match a row's text too).
 */
export const dataRows = (page: Page): Locator =>
  page.locator('table:not(.u-legend)').getByRole('row');

/** The URLs of the requests the page sends from now on that match `method` and a path ending. */
export function requestsSent(page: Page, method: string, ending: RegExp): string[] {
  const urls: string[] = [];
  page.on('request', (request) => {
    if (request.method() === method && ending.test(new URL(request.url()).pathname)) {
      urls.push(request.url());
    }
  });
  return urls;
}

/**
 * The colours a dialog's confirm button is painted (web/dashboard/src/styles.css): red
 * (`--danger`) for what takes something away, the primary colour (`--accent`) for what adds.
 */
export const CONFIRM_COLOURS = {
  destructive: 'rgb(180, 35, 24)',
  constructive: 'rgb(29, 78, 216)',
} as const;

/** The background colour of a dialog's confirm button (the last of its actions), once it shows. */
export async function confirmButtonColour(dialog: Locator): Promise<string> {
  await dialog.waitFor();
  return dialog
    .locator('.actions button')
    .last()
    .evaluate(
      (button) =>
        // runs in the page, which has getComputedStyle: this file's types have no DOM
        (
          globalThis as unknown as {
            getComputedStyle(element: unknown): { backgroundColor: string };
          }
        ).getComputedStyle(button).backgroundColor,
    );
}

/** The accessible name (`aria-label`, else its text) of what has focus, if it is a button. */
export const focusedButton = (page: Page): Promise<string | null> =>
  page.evaluate<string | null>(
    "document.activeElement instanceof HTMLButtonElement ? (document.activeElement.getAttribute('aria-label') ?? document.activeElement.textContent) : null",
  );

/**
 * The colour [r, g, b] the page's first usage chart paints at a point of its plot area, given
 * as fractions of the area's width and height from its top left (where a bar is drawn, or not).
 */
export const chartColourAt = (page: Page, x: number, y: number): Promise<number[]> =>
  // the page's own script runs in the browser: it has a document, this file's types do not
  page.evaluate<number[]>(
    `(() => {
      const box = document.querySelector('.chart-box');
      const canvas = box.querySelector('canvas');
      const plot = box.querySelector('.u-over').getBoundingClientRect();
      const drawn = canvas.getBoundingClientRect();
      const scale = canvas.width / drawn.width;
      const pixel = canvas.getContext('2d').getImageData(
        Math.round((plot.left - drawn.left + plot.width * ${x}) * scale),
        Math.round((plot.top - drawn.top + plot.height * ${y}) * scale),
        1,
        1,
      ).data;
      return [pixel[0], pixel[1], pixel[2]];
    })()`,
  );
