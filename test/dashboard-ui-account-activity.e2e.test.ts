// "Your recent activity" (decision 378): what a dashboard user did, in every organization they
// are a member of now, newest first — where someone who signed out everywhere after losing a
// laptop finds what was done in their name. GET /dashboard/api/user/activity against a live
// gateway on the real Redis and Postgres, and the account page in a real browser (chromium).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataRows, openWindow, screenshot } from './support/browser.js';
import { browserSuite, type BrowserSuite } from './support/browser-suite.js';
import { isolatedContext } from './support/context.js';
import { createMember, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { runCli, seed, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env } = isolatedContext('dashboard-ui-account-activity');
const emails = {
  alice: uniqueEmail('activity-alice'),
  bob: uniqueEmail('activity-bob'),
  owner: uniqueEmail('activity-owner'),
};
let ui: BrowserSuite;
let gateway: GatewayProcess;
let browser: Browser;
let first: SeededOrg;
let second: SeededOrg;
let alice: DashboardClient;
let aliceId: string;

interface ActivityEntry {
  readonly id: string;
  readonly org_id: string;
  readonly org_name: string;
  readonly user_id: string;
  readonly email: string | null;
  readonly action: string;
  readonly object_type: string;
  readonly object_id: string;
  readonly details: Record<string, unknown>;
  readonly created_at: string;
}
interface ActivityPage {
  readonly data: ActivityEntry[];
  readonly next_cursor: string | null;
}

async function createApp(client: DashboardClient, orgId: string, name: string): Promise<string> {
  const created = await client.post<{ id: string }>(`/dashboard/api/orgs/${orgId}/apps`, { name });
  expect(created.status).toBe(201);
  return created.body.id;
}

beforeAll(async () => {
  ui = await browserSuite(env, {
    seed: ['--name', 'Activity One'],
    users: { [emails.alice]: 'admin', [emails.bob]: 'admin' },
  });
  ({ gateway, browser, org: first } = ui);
  aliceId = ui.users[emails.alice]!.id;
  second = await seed(env, ['--name', 'Activity Two']);
  const added = await runCli(
    ['admin', 'add-member', '--email', emails.alice, '--org-id', second.org_id, '--role', 'admin'],
    env,
  );
  expect(added.code).toBe(0);
  await createMember(env, emails.owner, second.org_id, 'owner');
  alice = await ui.client(emails.alice);
});

afterAll(() => ui?.close());

describe('GET /dashboard/api/user/activity', () => {
  it("lists the user's own changes in every organization they are in, newest first, and no one else's", async () => {
    const inFirst = await createApp(alice, first.org_id, 'Alice in one');
    const inSecond = await createApp(alice, second.org_id, 'Alice in two');
    // another admin's change in the same organization is not Alice's
    await createApp(await ui.client(emails.bob), first.org_id, 'Bob in one');

    const answer = await alice.get<ActivityPage>('/dashboard/api/user/activity');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(
      answer.body.data.map((entry) => [entry.org_name, entry.action, entry.object_id]),
    ).toEqual([
      ['Activity Two', 'app.create', inSecond],
      ['Activity One', 'app.create', inFirst],
    ]);
    const [newest] = answer.body.data;
    expect(newest).toMatchObject({
      org_id: second.org_id,
      user_id: aliceId,
      email: emails.alice,
      object_type: 'app',
      details: { name: 'Alice in two' },
    });
    expect(typeof newest!.id).toBe('string');
    expect(Number.isNaN(Date.parse(newest!.created_at))).toBe(false);
    expect(answer.body.next_cursor).toBeNull();
  });

  it('leaves out an organization the user is no longer a member of', async () => {
    const owner = await ui.client(emails.owner);
    const removed = await owner.request(
      'DELETE',
      `/dashboard/api/orgs/${second.org_id}/members/${aliceId}`,
    );
    expect(removed.status).toBe(200);
    const answer = await alice.get<ActivityPage>('/dashboard/api/user/activity');
    expect(answer.status).toBe(200);
    expect(answer.body.data.map((entry) => entry.org_name)).toEqual(['Activity One']);
  });

  it('pages with limit and cursor, and refuses what it does not take', async () => {
    const later = await createApp(alice, first.org_id, 'Alice again');
    const page1 = await alice.get<ActivityPage>('/dashboard/api/user/activity?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((entry) => entry.object_id)).toEqual([later]);
    expect(page1.body.next_cursor).toMatch(/^\d+$/);
    const page2 = await alice.get<ActivityPage>(
      `/dashboard/api/user/activity?limit=1&cursor=${page1.body.next_cursor}`,
    );
    expect(page2.body.data.map((entry) => entry.details.name)).toEqual(['Alice in one']);
    expect(page2.body.next_cursor).toBeNull();

    const unknown = await alice.get<{ error: { code: string; message: string } }>(
      '/dashboard/api/user/activity?user_id=someone-else',
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('gw_invalid_request');
    const badCursor = await alice.get<{ error: { code: string } }>(
      '/dashboard/api/user/activity?cursor=abc',
    );
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.error.code).toBe('gw_invalid_request');
  });

  it('answers only a signed-in user', async () => {
    const anonymous = await fetch(`${gateway.url}/dashboard/api/user/activity`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe(
      'gw_session_required',
    );
    // an API key is no session
    const withKey = await fetch(`${gateway.url}/dashboard/api/user/activity`, {
      headers: { authorization: `Bearer ${first.api_key}` },
    });
    expect(withKey.status).toBe(401);
  });
});

describe('the account page', () => {
  it('shows the recent activity, each entry with its organization, and says to read it after signing out everywhere', async () => {
    const { page, close } = await openWindow(browser);
    await ui.visit(page, emails.alice, '/dashboard/account');
    const section = page.getByRole('region', { name: 'Your recent activity' });
    await section.waitFor();
    const rows = dataRows(page).filter({ hasText: 'app.create' });
    await rows.first().waitFor();
    await expect.poll(() => rows.count()).toBe(2);
    const headers = (await section.getByRole('columnheader').allTextContents()).map((text) =>
      text.trim(),
    );
    const organization = headers.indexOf('Organization');
    expect(organization).toBeGreaterThan(-1);
    expect(
      await rows.evaluateAll(
        (found, column) => found.map((row) => row.querySelectorAll('td')[column]?.textContent),
        organization,
      ),
    ).toEqual(['Activity One', 'Activity One']);
    expect(await section.textContent()).not.toContain('Bob in one');
    expect(await page.getByRole('region', { name: 'Sign out everywhere' }).textContent()).toContain(
      'your recent activity',
    );
    await screenshot(page, 'account-activity-01');
    // an entry's organization is a link to it
    await rows.first().getByRole('link', { name: 'Activity One' }).click();
    await page.waitForURL(`**/dashboard/orgs/${first.org_id}`);
    await close();
  });
});
