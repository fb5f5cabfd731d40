// The dashboard checked by axe-core (WCAG 2.0 and 2.1, levels A and AA) in a browser (chromium)
// against a live gateway: every page of an organization's navigation, an app's page, the
// account page, the pages of a signed-out visitor (sign-in, sign-up, forgot password), an open
// confirmation dialog and an open edit form, in a desktop window and a phone's; a violation of
// serious or critical impact fails the test with its rule and the elements it found. The edges
// of text fields, and the focus ring, stand out 3:1 from what is around them (axe measures
// neither). And two flows walked with the keyboard only: revoking an API key through its
// confirmation dialog (focus taken by the dialog, given back on Escape, kept on the page when
// the key's row goes), and adding a webhook endpoint. The walk revokes the file's only key: it
// runs after the checks that open its dialog.
import axe from 'axe-core';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import { createOAuthClient } from './support/oauth.js';
import type { GatewayProcess, SeededOrg } from './support/processes.js';

const { env } = isolatedContext('dashboard-ui-accessibility');
const admin = uniqueEmail('a11y-admin');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let org: SeededOrg;

const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

/** One element axe found breaking a rule: the CSS selectors that reach it. */
interface Violation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/**
 * The serious and critical WCAG 2 A/AA violations axe finds in the page as it is drawn now. axe
 * is evaluated through the browser's debugging protocol (as the tests' own scripts are), which
 * the page's Content-Security-Policy does not govern: an injected <script> element would be
 * refused by it (`script-src 'self'`), and the policy stays as served.
 */
async function violations(page: Page): Promise<Violation[]> {
  const loaded = await page.evaluate<boolean>('typeof window.axe === "object"');
  if (!loaded) await page.evaluate(axe.source);
  return page.evaluate<Violation[]>(`(async () => {
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    });
    return result.violations
      .filter((rule) => rule.impact === 'serious' || rule.impact === 'critical')
      .map((rule) => ({
        id: rule.id,
        impact: rule.impact,
        help: rule.help,
        targets: rule.nodes.map((node) => node.target.join(' ')),
      }));
  })()`);
}

/** Fails with each rule broken on `page` (named `where`), the elements listed. */
async function expectNoViolations(page: Page, where: string): Promise<void> {
  const found = await violations(page);
  const listed = found.map(
    (rule) => `${where}: ${rule.id} (${rule.impact}) ${rule.help}: ${rule.targets.join(', ')}`,
  );
  expect(listed).toEqual([]);
}

/** The organization's pages, as the navigation links them: label → path under the org. */
async function navigationLinks(page: Page): Promise<{ label: string; href: string }[]> {
  return page
    .getByRole('navigation', { name: 'Dashboard' })
    .getByRole('link')
    .evaluateAll((links) =>
      links.map((link) => ({
        label: (link.textContent ?? '').trim(),
        href: (link as unknown as { getAttribute(name: string): string }).getAttribute('href'),
      })),
    );
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    gatewayEnv: {
      DASHBOARD_SIGNUP: 'true',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    },
    seed: ['--name', 'Access Co', '--wallet', '100.00'],
    users: { [admin]: 'admin' },
  });
  ({ gateway, browser, org } = ui);
  const client = await ui.client(admin);
  const webhook = await client.post(`/dashboard/api/orgs/${org.org_id}/webhooks`, {
    url: 'http://127.0.0.1:9/hooks',
  });
  expect(webhook.status).toBe(201);
  // the app page lists its OAuth clients, each with its row buttons
  await createOAuthClient(env, org.app_id, ['http://127.0.0.1:9/cb'], { name: 'Web app' });
});

afterAll(() => ui?.close());

/** The path of the organization's page `section` ('' the overview). */
const orgPath = (section: string, id?: string): string =>
  ['/dashboard/orgs', org.org_id, section, id].filter(Boolean).join('/');

/** Every page the navigation links (the test checks it links these and no other), and an app's. */
const PAGES: readonly (readonly [label: string, path: () => string])[] = [
  ['Overview', () => orgPath('')],
  ['Usage', () => orgPath('usage')],
  ['Product users', () => orgPath('users')],
  ['Apps & connections', () => orgPath('apps')],
  ['API keys', () => orgPath('keys')],
  ['Service keys', () => orgPath('service-keys')],
  ['Members', () => orgPath('members')],
  ['Audit log', () => orgPath('audit-log')],
  ['Caps', () => orgPath('caps')],
  ['Wallet', () => orgPath('wallet')],
  ['Provider credentials', () => orgPath('provider-credentials')],
  ['Webhooks', () => orgPath('webhooks')],
  ['Connected apps', () => orgPath('connected-apps')],
  ['Models & prices', () => '/dashboard/models'],
  ['Your account', () => '/dashboard/account'],
];
const APP_PAGE = ['An app', () => orgPath('apps', org.app_id)] as const;

// The two sizes are checked side by side (the two suites at once, each its own tests in turn in
// a window of its own): much of a page's check is waiting for what it loads. The keyboard walks
// below start once both are done.
describe.concurrent.each([
  ['desktop', DESKTOP],
  ['phone', PHONE],
])('the dashboard in a %s window, checked by axe', (name, viewport) => {
  // one window for the signed-in pages of this size (one page load each, no sign-in)
  let window: Awaited<ReturnType<typeof openWindow>>;
  beforeAll(async () => {
    window = await openWindow(browser, viewport);
    await ui.visit(window.page, admin, orgPath(''));
  });
  afterAll(() => window?.close());

  it.sequential('checks every page its navigation links', async () => {
    const links = await navigationLinks(window.page);
    expect(links).toEqual(PAGES.map(([label, path]) => ({ label, href: path() })));
  });

  it.sequential.each([...PAGES, APP_PAGE])(
    '%s: no serious or critical violation',
    async (label, path) => {
      const { page } = window;
      await page.goto(`${gateway.url}${path()}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      // what the page loads after its heading (its lists, the usage chart) drawn too
      await page.waitForLoadState('networkidle');
      await expectNoViolations(page, label);
      await screenshot(page, `a11y-${name}-${label.replace(/\W+/g, '-').toLowerCase()}`);
    },
  );

  it.sequential(
    'draws the edges of its text fields and lists in a colour that stands out (3:1), and their placeholders 4.5:1',
    async () => {
      const { page, close } = await openWindow(browser, viewport);
      await ui.visit(page, admin, `/dashboard/orgs/${org.org_id}/keys`);
      await page.getByRole('button', { name: 'Issue key' }).waitFor();
      expect(await page.locator('input[placeholder]').count()).toBeGreaterThan(2);
      // a field is known by its edge alone (WCAG 1.4.11): the page's text fields and lists
      const faint = await page.evaluate<string[]>(`(() => {
      ${CONTRAST_IN_PAGE}
      return [...document.querySelectorAll('input:not([type=checkbox]):not([type=radio]), select')]
        .map((field) => [field, contrast(getComputedStyle(field).borderTopColor, field)])
        .filter(([, measured]) => measured < 3)
        .map(([field, measured]) => (field.name || field.tagName) + ' ' + measured);
    })()`);
      expect(faint).toEqual([]);
      // and a placeholder, which says what an empty field means ("unlimited"), is text: 4.5:1
      const pale = await page.evaluate<string[]>(`(() => {
      ${CONTRAST_IN_PAGE}
      return [...document.querySelectorAll('input[placeholder]')]
        .map((field) => [field, getComputedStyle(field, '::placeholder')])
        .filter(([field, style]) => style.opacity !== '1' || ratio(style.color, getComputedStyle(field).backgroundColor) < 4.5)
        .map(([field, style]) => field.name + ' ' + style.color + ' ' + style.opacity);
    })()`);
      expect(pale).toEqual([]);
      await close();
    },
  );

  it.sequential('has none on the signed-out pages: sign-in, sign-up, forgot password', async () => {
    const { page, close } = await openWindow(browser, viewport);
    for (const path of ['sign-in', 'sign-up', 'forgot-password']) {
      await page.goto(`${gateway.url}/dashboard/${path}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await expectNoViolations(page, path);
      await screenshot(page, `a11y-${name}-${path}`);
    }
    await close();
  });

  it.sequential(
    'has none with a confirmation dialog open, an edit form open, or a role being changed',
    async () => {
      const { page, close } = await openWindow(browser, viewport);
      await ui.visit(page, admin, `/dashboard/orgs/${org.org_id}/keys`);
      await page
        .getByRole('button', { name: /^Revoke / })
        .first()
        .click();
      await page.getByRole('dialog').waitFor();
      await expectNoViolations(page, 'revoke dialog');
      await screenshot(page, `a11y-${name}-revoke-dialog`);
      await page.keyboard.press('Escape');
      await page
        .getByRole('button', { name: /^Edit / })
        .first()
        .click();
      await page.getByRole('button', { name: 'Close', exact: true }).waitFor();
      await expectNoViolations(page, 'edit form');
      // a member's role chosen anew: its Change and Keep buttons show
      await ui.visit(page, admin, orgPath('members'));
      await page.getByRole('combobox', { name: `Role of ${admin}` }).selectOption('member');
      await page.getByRole('button', { name: /^Keep / }).waitFor();
      await expectNoViolations(page, 'role change');
      await screenshot(page, `a11y-${name}-edit-form`);
      await close();
    },
  );
});

/**
 * In the page: the contrast ratio (WCAG 2's) of two CSS colours (`ratio`), and of a colour with
 * the background an element is drawn on, that of its nearest ancestor that paints one
 * (`contrast`).
 */
const CONTRAST_IN_PAGE = `
  const channels = (colour) => colour.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = (colour) => {
    const [r, g, b] = channels(colour).map((value) => {
      const c = value / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const backdropOf = (element) => {
    for (let at = element.parentElement; at; at = at.parentElement) {
      const colour = getComputedStyle(at).backgroundColor;
      if (colour !== 'transparent' && !/rgba\\(.*, 0\\)$/.test(colour)) return colour;
    }
    return 'rgb(255, 255, 255)';
  };
  const ratio = (one, other) => {
    const [a, b] = [luminance(one), luminance(other)];
    return Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100;
  };
  const contrast = (colour, element) => ratio(colour, backdropOf(element));
`;

/** What has keyboard focus: its accessible name, and how its focus ring is drawn. */
interface Focused {
  readonly tag: string;
  readonly name: string;
  readonly ringDrawn: boolean;
  /** The ring's contrast with the background around it (WCAG 1.4.11 asks 3:1). */
  readonly ringContrast: number;
  readonly inOpenDialog: boolean;
}

const focused = (page: Page): Promise<Focused | null> =>
  // runs in the page, which has a document and getComputedStyle: this file's types have no DOM
  page.evaluate<Focused | null>(`(() => {
    ${CONTRAST_IN_PAGE}
    const element = document.activeElement;
    if (!element || element === document.body) return null;
    const style = getComputedStyle(element);
    const label = element.labels && element.labels[0] ? element.labels[0].textContent : null;
    const outlined = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    return {
      tag: element.tagName,
      name: (element.getAttribute('aria-label') ?? label ?? element.textContent ?? '').trim(),
      ringDrawn: element.matches(':focus-visible') && (outlined || style.boxShadow !== 'none'),
      ringContrast: outlined ? contrast(style.outlineColor, element) : 0,
      inOpenDialog: element.closest('dialog[open]') !== null,
    };
  })()`);

/**
 * Presses Tab until what has focus is named `name` (at most `limit` times), checking that
 * every element the keyboard stops on on the way shows its focus ring, in a colour that stands
 * out from the background around it (3:1).
 */
async function tabTo(page: Page, name: string | RegExp, limit = 80): Promise<Focused> {
  const unseen: string[] = [];
  const passed: string[] = [];
  for (let press = 0; press < limit; press++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    passed.push(now ? `${now.tag} ${now.name}` : 'nothing');
    if (now && (!now.ringDrawn || now.ringContrast < 3)) {
      unseen.push(`${now.tag} ${now.name} (ring contrast ${now.ringContrast})`);
    }
    if (now && (typeof name === 'string' ? now.name === name : name.test(now.name))) {
      expect(unseen, passed.join(' | ')).toEqual([]);
      return now;
    }
  }
  throw new Error(
    `${limit} presses of Tab never reached ${String(name)}, only: ${passed.join(' | ')}`,
  );
}

/**
 * Opens the organization's page labelled `label` from its overview with the keyboard: Tab to its
 * link in the navigation, Enter, and focus lands on the page's heading; then waits for `ready`.
 */
async function openWithKeyboard(page: Page, label: string, ready: Locator): Promise<void> {
  await ui.visit(page, admin, `/dashboard/orgs/${org.org_id}`);
  await tabTo(page, label);
  await page.keyboard.press('Enter');
  await expect.poll(() => focused(page)).toMatchObject({ tag: 'H1', name: label });
  // its list loaded, as a user sees it before going on (what shows while it loads, which it
  // replaces, is no place to tab to)
  await ready.waitFor();
}

describe('the dashboard with the keyboard only', () => {
  it('revokes an API key through its confirmation: the dialog takes focus, Escape closes it, focus comes back', async () => {
    const { page, close } = await openWindow(browser);
    await openWithKeyboard(page, 'API keys', page.getByRole('button', { name: /^Revoke / }));
    const revoke = /^Revoke /;
    const opener = await tabTo(page, revoke);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await expect.poll(async () => (await focused(page))?.inOpenDialog).toBe(true);
    await screenshot(page, 'a11y-keyboard-revoke-dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => focused(page)).toEqual(opener);

    await page.keyboard.press('Enter');
    await dialog.waitFor();
    // the dialog opens on Cancel (the choice that loses nothing); Tab goes on to its button
    expect(await focused(page)).toMatchObject({ name: 'Cancel', inOpenDialog: true });
    const confirm = await tabTo(page, 'Revoke key', 1);
    expect(confirm.inOpenDialog).toBe(true);
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => page.getByRole('button', { name: revoke }).count()).toBe(0);
    await screenshot(page, 'a11y-keyboard-revoked');
    // its row gone with its button, focus stays on the page (not dropped to its start), on the
    // heading of the list it was in, and Tab goes on from there
    await expect
      .poll(() => focused(page))
      .toMatchObject({ tag: 'H2', name: 'Keys of Seeded app › Seeded connection' });
    await page.keyboard.press('Shift+Tab');
    expect(await focused(page)).toMatchObject({ name: 'Issue key', ringDrawn: true });
    await close();
  });

  it('adds a webhook endpoint: every field reached with Tab, a ring on each, focus on the secret shown', async () => {
    const { page, close } = await openWindow(browser);
    await openWithKeyboard(
      page,
      'Webhooks',
      page.getByRole('button', { name: 'Deliveries of http://127.0.0.1:9/hooks' }),
    );
    await tabTo(page, /^URL/);
    await page.keyboard.type('http://127.0.0.1:9/keyboard');
    await tabTo(page, 'Description (optional)', 1);
    await page.keyboard.type('Added with the keyboard');
    await tabTo(page, 'wallet.low_balance', 20);
    await page.keyboard.press('Space');
    await tabTo(page, 'Add endpoint', 20);
    await page.keyboard.press('Enter');
    await page
      .getByRole('cell', { name: 'http://127.0.0.1:9/keyboard Added with the keyboard' })
      .waitFor();
    await screenshot(page, 'a11y-keyboard-webhook-added');
    // focus moves to the secret shown once, to be copied from there
    await expect
      .poll(() => focused(page))
      .toMatchObject({ tag: 'INPUT', name: 'Signing secret', ringDrawn: true });
    await close();
  });
});
