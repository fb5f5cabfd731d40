// The dashboard's create forms send an Idempotency-Key (decision 372), in a real browser against
// a started gateway: when the answer to "Create app" is lost on the way back (the app was made),
// sending the form again reuses the submission's key, so the gateway answers the first answer
// and the organization has one app, not two; the next submission gets a new key. A form sent
// twice in one frame sends one request; a retry told "still being processed" (409 with
// Retry-After: an earlier send still runs) keeps the key for the next retry (decision 379).
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWindow, screenshot, type BrowserWindow } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { uniqueEmail } from './support/dashboard.js';
import type { GatewayProcess } from './support/processes.js';
import { requestFingerprint } from '../src/idempotency/store.js';

const { env, db } = isolatedContext('dash-ui-idem');
const email = uniqueEmail('ui-idem');
let ui: BrowserSuite;
let gateway: GatewayProcess;
let window: BrowserWindow;
let page: Page;
let orgId: string;
let userId: string;

beforeAll(async () => {
  ui = await browserSuite(env, { users: { [email]: null } });
  gateway = ui.gateway;
  ({ personal_org_id: orgId, id: userId } = ui.users[email]!);
  window = await openWindow(ui.browser);
  page = window.page;
});

afterAll(async () => {
  await window?.close();
  await ui?.close();
});

async function appIds(name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM apps WHERE org_id = $1 AND name = $2',
    [orgId, name],
  );
  return rows.map((row) => row.id);
}

describe('a create form', () => {
  it('sent again after its answer was lost makes one app: the retry reuses its key', async () => {
    await ui.signIn(page, email);
    await page.goto(`${gateway.url}/dashboard/orgs/${orgId}/apps`);
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();

    const creates: Request[] = [];
    const appsPath = `/dashboard/api/orgs/${orgId}/apps`;
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === appsPath) {
        creates.push(request);
      }
    });
    // The first answer is lost on the way back: the gateway made the app, the page never hears.
    let lose = true;
    await page.route(`**${appsPath}`, async (route) => {
      if (route.request().method() !== 'POST' || !lose) return route.continue();
      lose = false;
      await route.fetch();
      await route.abort('failed');
    });

    await page.getByLabel('App name').fill('Lost answer');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByText('The gateway could not be reached.').waitFor();
    await expect.poll(() => appIds('Lost answer')).toHaveLength(1);
    const made = await appIds('Lost answer');

    // The user sends the form again, as it stands.
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('link', { name: 'Lost answer' }).waitFor();
    await screenshot(page, 'idempotent-create-retried');
    expect(creates).toHaveLength(2);
    const [first, retry] = creates.map((request) => request.headers()['idempotency-key']);
    expect(first).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(retry).toBe(first);
    const replayed = await creates[1]!.response();
    expect(replayed?.status()).toBe(201);
    expect(replayed?.headers()['idempotent-replayed']).toBe('true');
    expect(await appIds('Lost answer')).toEqual(made);

    // A new submission is a new create, with a new key.
    await page.getByLabel('App name').fill('Second app');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('link', { name: 'Second app' }).waitFor();
    expect(creates).toHaveLength(3);
    expect(creates[2]!.headers()['idempotency-key']).not.toBe(first);
    expect(await appIds('Second app')).toHaveLength(1);
  });

  it('sent twice in one frame sends one request and makes one app', async () => {
    const appsPath = `/dashboard/api/orgs/${orgId}/apps`;
    const creates: Request[] = [];
    const onRequest = (request: Request): void => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === appsPath) {
        creates.push(request);
      }
    };
    page.on('request', onRequest);
    try {
      await page.getByLabel('App name').fill('Double submit');
      // Both before the page re-renders its button as busy: what a fast double click can do.
      await page.locator('form[aria-labelledby="create-app-heading"]').evaluate((form) => {
        const submitted = form as unknown as { requestSubmit(): void };
        submitted.requestSubmit();
        submitted.requestSubmit();
      });
      await page.getByRole('link', { name: 'Double submit' }).waitFor();
      expect(creates).toHaveLength(1);
      expect(await appIds('Double submit')).toHaveLength(1);
    } finally {
      page.off('request', onRequest);
    }
  });

  it('told "still being processed" keeps its key: the retry once the first has run replays it', async () => {
    await page.unrouteAll();
    const appsPath = `/dashboard/api/orgs/${orgId}/apps`;
    const name = 'Slow first';
    const creates: Request[] = [];
    const onRequest = (request: Request): void => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === appsPath) {
        creates.push(request);
      }
    };
    page.on('request', onRequest);
    // The first send is lost on the way (the page hears nothing) while the gateway runs it.
    let lose = true;
    await page.route(`**${appsPath}`, async (route) => {
      if (route.request().method() !== 'POST' || !lose) return route.continue();
      lose = false;
      await route.abort('failed');
    });
    try {
      await page.getByLabel('App name').fill(name);
      await page.getByRole('button', { name: 'Create app' }).click();
      await page.getByText('The gateway could not be reached.').waitFor();
      const key = creates[0]!.headers()['idempotency-key']!;
      // What the gateway holds while that first request runs: the key, claimed.
      await db.query(
        `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at)
         VALUES ($1, $2, 'POST /dashboard/api/orgs/{org_id}/apps', $3, $4, 'running',
                 now() + interval '1 day')`,
        [orgId, `user:${userId}`, key, requestFingerprint(appsPath, { name })],
      );

      await page.getByRole('button', { name: 'Create app' }).click();
      await page.getByText('still being processed').waitFor();
      expect(creates).toHaveLength(2);
      expect(creates[1]!.headers()['idempotency-key']).toBe(key);

      // The first request finishes on the gateway: the app is made under its key.
      await db.query('DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2', [orgId, key]);
      const csrf = (await (await page.request.get(`${gateway.url}/auth/csrf`)).json()) as {
        csrf_token: string;
      };
      const first = await page.request.post(`${gateway.url}${appsPath}`, {
        headers: {
          'x-csrf-token': csrf.csrf_token,
          'idempotency-key': key,
          origin: gateway.url,
        },
        data: { name },
      });
      expect(first.status()).toBe(201);

      // The user tries once more: the same key, so the first answer, not a second app.
      await page.getByRole('button', { name: 'Create app' }).click();
      await page.getByRole('link', { name }).waitFor();
      expect(creates).toHaveLength(3); // the page's own (the send above is not the page's)
      const retry = creates[2]!;
      expect(retry.headers()['idempotency-key']).toBe(key);
      expect((await retry.response())?.headers()['idempotent-replayed']).toBe('true');
      expect(await appIds(name)).toHaveLength(1);
      await screenshot(page, 'idempotent-create-kept-key');
    } finally {
      page.off('request', onRequest);
      await page.unrouteAll();
    }
  });
});
