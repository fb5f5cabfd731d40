// No cache keeps what a signed-in dashboard user reads: every answer of a route that takes a
// dashboard session (the organization's product users, members' e-mails, usage, the audit
// log) is sent with Cache-Control: no-store, so it is not left in the browser's disk cache
// (or a proxy's) after the user signs out of a shared computer. Against a live gateway on the
// real Redis and Postgres, for every such GET route the gateway declares.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeDeclarations } from '../src/routes/index.js';
import { isolatedContext } from './support/context.js';
import { createMember, DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env } = isolatedContext('dashboard-no-store');
const adminEmail = uniqueEmail('no-store-admin');
let gateway: GatewayProcess;
let org: SeededOrg;
let admin: DashboardClient;
/** The path parameters a GET route of the seeded organization can be given. */
const params: Record<string, string> = {};

beforeAll(async () => {
  gateway = await startGateway({ ...env, DASHBOARD_INSECURE_COOKIES: 'true' });
  org = await seed(env, ['--name', 'No Store Co']);
  const member = await createMember(env, adminEmail, org.org_id, 'admin');
  admin = new DashboardClient(gateway.url, gateway.url);
  expect((await admin.login(adminEmail, TEST_PASSWORD)).status).toBe(200);
  const user = await fetch(`${gateway.url}/product-users/by-external-id`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${org.service_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: org.app_id, external_user_id: 'no-store-user' }),
  });
  expect(user.status).toBe(201);
  const webhook = await admin.post<{ id: string }>(`/dashboard/api/orgs/${org.org_id}/webhooks`, {
    url: 'https://hooks.example.com/no-store',
  });
  expect(webhook.status).toBe(201);
  Object.assign(params, {
    org_id: org.org_id,
    app_id: org.app_id,
    connection_id: org.app_connection_id,
    product_end_user_id: ((await user.json()) as { product_end_user_id: string })
      .product_end_user_id,
    webhook_id: webhook.body.id,
    user_id: member.id,
  });
});

afterAll(async () => {
  await gateway?.stop();
});

describe('answers to a signed-in dashboard user', () => {
  const signedInKinds = new Set(['session', 'org_member']);
  const reads = routeDeclarations.filter(
    (route) => route.method === 'GET' && signedInKinds.has(route.caller.kind),
  );

  it('are sent with Cache-Control: no-store, on every GET route that takes a session', async () => {
    const served: string[] = [];
    for (const route of reads) {
      const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
      if (!names.every((name) => name in params)) continue;
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => params[name]!);
      const answer = await admin.get(path);
      expect(answer.status, `GET ${route.path}`).toBe(200);
      expect(answer.headers.get('cache-control'), `GET ${route.path}`).toBe('no-store');
      // and no browser reads the JSON as anything else (a script, a page)
      expect(answer.headers.get('x-content-type-options'), `GET ${route.path}`).toBe('nosniff');
      served.push(route.path);
    }
    // the organization's lists and pages, its wallet, usage, audit log, a product user, …
    expect(served.length).toBeGreaterThanOrEqual(25);
    expect(served).toEqual(
      expect.arrayContaining([
        '/dashboard/api/orgs/{org_id}/product-users',
        '/dashboard/api/orgs/{org_id}/members',
        '/dashboard/api/orgs/{org_id}/audit-log',
        '/dashboard/api/orgs/{org_id}/usage',
        '/auth/session',
      ]),
    );
  });

  it('are sent with Cache-Control: no-store when refused too', async () => {
    const refused = await admin.get(`/dashboard/api/orgs/${org.org_id}/usage?from=yesterday`);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('sign in and sign out answer JSON that no browser sniffs either', async () => {
    const client = new DashboardClient(gateway.url, gateway.url);
    const signedIn = await client.login(adminEmail, TEST_PASSWORD);
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get('x-content-type-options')).toBe('nosniff');
    const signedOut = await client.post('/auth/logout');
    expect(signedOut.status).toBe(200);
    expect(signedOut.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
