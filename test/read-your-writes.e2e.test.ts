// Read-your-writes on the instance that made a change (decision 381): once a dashboard write
// has answered, the next request to the same gateway sees it, even while the gateway's own
// pub/sub message has not come back yet. The gateway reaches Redis through a relay that holds
// back what Redis sends to its invalidation subscriber during each change, so the test does not
// depend on how fast the message travels; each change is repeated many times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { startSubscriberRelay, type SubscriberRelay } from './support/subscriber-relay.js';

const { env, db, prefix } = isolatedContext('ryw');
/** Each change is checked this many times (each one holds whatever the machine's load). */
const ITERATIONS = 30;
/** A loop of requests, on a machine that may be loaded. */
const LOOP_TIMEOUT_MS = 120_000;
let relay: SubscriberRelay;
let gateway: GatewayProcess;
let tenant: SeededOrg;
let admin: DashboardClient;

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

/** The status and error code (if any) of an inference call with `apiKey` for `externalUserId`. */
async function infer(apiKey: string, externalUserId = 'anyone'): Promise<[number, string?]> {
  const answer = await postJson<Partial<ErrorBody>>(`${gateway.url}/v1/chat/completions`, chat, {
    ...bearer(apiKey),
    'x-gw-external-user-id': externalUserId,
  });
  return answer.body.error ? [answer.status, answer.body.error.code] : [answer.status];
}

/** Runs `change` while the gateway's own invalidation messages are held back. */
async function withEchoHeld<T>(change: () => Promise<T>): Promise<T> {
  relay.hold();
  try {
    return await change();
  } finally {
    relay.release();
  }
}

beforeAll(async () => {
  relay = await startSubscriberRelay(prefix);
  // Seeded directly, the gateway alone goes through the relay.
  tenant = await seed(env);
  const email = uniqueEmail('ryw-admin');
  await createMember(env, email, tenant.org_id, 'admin');
  gateway = await startGateway({ ...env, REDIS_URL: relay.url, REDIS_CLUSTER_NODES: '' });
  admin = await signInTo(gateway, email);
});

afterAll(async () => {
  await gateway?.stop();
  await relay?.close();
});

describe('a change answered by a gateway is seen by its next request', () => {
  it(
    'blocking and unblocking a product user from the dashboard',
    async () => {
      expect(await infer(tenant.api_key, 'toggled')).toEqual([200]);
      const { rows } = await db.query<{ id: string }>(
        "SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = 'toggled'",
        [tenant.org_id],
      );
      const userId = rows[0]!.id;
      for (let iteration = 0; iteration < ITERATIONS; iteration += 1) {
        const afterBlock = await withEchoHeld(async () => {
          const blocked = await admin.post(`/dashboard/api/product-users/${userId}/block`);
          expect(blocked.status).toBe(200);
          return infer(tenant.api_key, 'toggled');
        });
        expect(afterBlock).toEqual([403, 'gw_product_user_blocked']);
        const afterUnblock = await withEchoHeld(async () => {
          const unblocked = await admin.post(`/dashboard/api/product-users/${userId}/unblock`);
          expect(unblocked.status).toBe(200);
          return infer(tenant.api_key, 'toggled');
        });
        expect(afterUnblock).toEqual([200]);
      }
    },
    LOOP_TIMEOUT_MS,
  );

  it(
    "setting and raising a product user's cap from the dashboard",
    async () => {
      expect(await infer(tenant.api_key, 'capped')).toEqual([200]);
      const { rows } = await db.query<{ id: string }>(
        "SELECT id FROM product_users WHERE org_id = $1 AND external_user_id = 'capped'",
        [tenant.org_id],
      );
      const capPath = `/dashboard/api/product-users/${rows[0]!.id}/cap`;
      for (let iteration = 0; iteration < ITERATIONS; iteration += 1) {
        const [afterCap] = await withEchoHeld(async () => {
          const capped = await admin.request('PUT', capPath, {
            amount: '0.000001',
            credit_mode: 'enforce',
            overrun_policy: 'reject',
          });
          expect(capped.status).toBe(200);
          return infer(tenant.api_key, 'capped');
        });
        expect(afterCap).toBe(403);
        const afterRaise = await withEchoHeld(async () => {
          const raised = await admin.request('PUT', capPath, { amount: '50' });
          expect(raised.status).toBe(200);
          return infer(tenant.api_key, 'capped');
        });
        expect(afterRaise).toEqual([200]);
      }
    },
    LOOP_TIMEOUT_MS,
  );

  it(
    'revoking an API key from the dashboard',
    async () => {
      for (let iteration = 0; iteration < ITERATIONS; iteration += 1) {
        const issued = await admin.post<{ id: string; key: string }>(
          `/dashboard/api/connections/${tenant.app_connection_id}/api-keys`,
          {},
        );
        expect(issued.status).toBe(201);
        // Cached by this gateway as a working key.
        expect(await infer(issued.body.key)).toEqual([200]);
        const afterRevoke = await withEchoHeld(async () => {
          const revoked = await admin.post(`/dashboard/api/api-keys/${issued.body.id}/revoke`);
          expect(revoked.status).toBe(200);
          return infer(issued.body.key);
        });
        expect(afterRevoke).toEqual([401, 'gw_key_inactive']);
      }
    },
    LOOP_TIMEOUT_MS,
  );
});
