// Answers that carry a secret (a raw key, a signing or client secret, a token, a CSRF token) or
// a person's profile are sent with `Cache-Control: no-store`, so no browser or proxy cache keeps
// them: each such route declares it and the router sets the header (decision 361).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env } = isolatedContext('secret-answers');
let gateway: GatewayProcess;
let org: SeededOrg;
let owner: DashboardClient;

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
  const email = uniqueEmail('secret-answers');
  await createMember(env, email, org.org_id, 'owner');
  owner = await signInTo(gateway, email);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('answers that carry a secret are never stored by a cache', () => {
  it('the dashboard answers with a new key, secret or CSRF token', async () => {
    const webhook = await owner.post<{ id: string; secret: string }>(
      `/dashboard/api/orgs/${org.org_id}/webhooks`,
      { url: 'https://hooks.example.invalid/in' },
    );
    const key = await owner.post<{ id: string; key: string }>(
      `/dashboard/api/connections/${org.app_connection_id}/api-keys`,
    );
    const answers = {
      'webhook create': webhook,
      'webhook rotate': await owner.post(
        `/dashboard/api/orgs/${org.org_id}/webhooks/${webhook.body.id}/rotate-secret`,
      ),
      'service-key create': await owner.post(`/dashboard/api/orgs/${org.org_id}/service-keys`),
      'API key create': key,
      'API key rotate': await owner.post(`/dashboard/api/api-keys/${key.body.id}/rotate`),
      'OAuth client create': await owner.post(`/dashboard/api/apps/${org.app_id}/oauth-clients`, {
        name: 'cached?',
        redirect_uris: ['https://app.example.com/cb'],
      }),
      'CSRF token': await owner.get('/auth/csrf'),
    };
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.status, name).toBeLessThan(300);
      expect(answer.headers.get('cache-control'), name).toBe('no-store');
    }
    // The body held the secret: it is what the header protects.
    expect(webhook.body.secret).toMatch(/^whsec_/);
    expect(key.body.key).toMatch(/^gw_/);
  });

  it("a product user's profile, through the service-key API and the dashboard", async () => {
    const url = `${gateway.url}/product-users/by-external-id`;
    const headers = { 'content-type': 'application/json', ...bearer(org.service_key) };
    const put = await fetch(url, {
      method: 'PUT',
      headers,
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'no-store',
        email: 'ada@example.com',
      }),
    });
    const { product_end_user_id: id } = (await put.json()) as { product_end_user_id: string };
    const get = await fetch(`${url}?app_id=${org.app_id}&external_user_id=no-store`, { headers });
    const dashboard = await owner.get(`/dashboard/api/product-users/${id}`);
    for (const [name, status, cacheControl] of [
      ['PUT', put.status, put.headers.get('cache-control')],
      ['GET', get.status, get.headers.get('cache-control')],
      ['dashboard', dashboard.status, dashboard.headers.get('cache-control')],
    ] as const) {
      expect(status, name).toBeLessThan(300);
      expect(cacheControl, name).toBe('no-store');
    }
  });

  it('and its refusals too; an answer without a secret keeps the default', async () => {
    const missing = await fetch(
      `${gateway.url}/product-users/by-external-id?app_id=${org.app_id}&external_user_id=nobody`,
      { headers: bearer(org.service_key) },
    );
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).toBe('no-store');
    const summary = await fetch(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=no-store`,
      { headers: bearer(org.service_key) },
    );
    expect(summary.status).toBe(200);
    expect(summary.headers.get('cache-control')).toBeNull();
  });
});
