// A cap's setting changed alone, the amount kept (decision 315), as a hostile tenant and two
// admins racing each other would drive it: another org's levels answer 404 whatever the body
// (never a 400 that tells whether they have a cap), and changes of one cap made at once or
// against a clear each land whole, one after the other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import { runCliJson, seed, startGateway, type GatewayProcess } from './support/processes.js';

const { env, db } = isolatedContext('caps-part');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway(env);
});

afterAll(async () => {
  await gateway?.stop();
});

async function productUser(serviceKey: string, appId: string, external: string): Promise<string> {
  const response = await fetch(`${gateway.url}/product-users/by-external-id`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${serviceKey}` },
    body: JSON.stringify({ app_id: appId, external_user_id: external }),
  });
  return ((await response.json()) as { product_end_user_id: string }).product_end_user_id;
}

const rules = async (orgId: string) =>
  (
    await db.query(
      `SELECT scope, amount::text, per_user_amount::text, credit_mode, overrun_policy, status
         FROM cap_rules WHERE org_id = $1 ORDER BY scope, status`,
      [orgId],
    )
  ).rows;

describe('a setting changed alone (decision 315)', () => {
  it("another org's caps answer 404 to a partial body, with or without a cap, and stay as they were", async () => {
    const other = await seed(env, ['--wallet', '10.00']);
    const victim = await seed(env, ['--wallet', '10.00']);
    const capped = await productUser(victim.service_key, victim.app_id, 'capped');
    const uncapped = await productUser(victim.service_key, victim.app_id, 'uncapped');
    await runCliJson(
      [
        ...['cap', 'set', '--scope', 'app_connection', '--app-connection-id'],
        ...[victim.app_connection_id, '--amount', '5'],
      ],
      env,
    );
    await runCliJson(
      [
        ...['cap', 'set', '--scope', 'product_user', '--app-id', victim.app_id],
        ...['--external-user-id', 'capped', '--amount', '2'],
      ],
      env,
    );
    const before = await rules(victim.org_id);
    const email = uniqueEmail('caps-part-x');
    await createMember(env, email, other.org_id, 'admin');
    const admin = await signInTo(gateway, email);
    for (const [path, body] of [
      [`/dashboard/api/connections/${victim.app_connection_id}/cap`, { credit_mode: 'disabled' }],
      [`/dashboard/api/connections/${victim.app_connection_id}/cap`, {}],
      [`/dashboard/api/product-users/${capped}/cap`, { overrun_policy: 'reject' }],
      [`/dashboard/api/product-users/${uncapped}/cap`, { credit_mode: 'disabled' }],
      [`/dashboard/api/product-users/${uncapped}/cap`, {}],
      [`/dashboard/api/orgs/${victim.org_id}/cap`, {}],
    ] as const) {
      const answer = await admin.request<{ error: { code: string } }>('PUT', path, body);
      expect({ path, body, status: answer.status }).toEqual({ path, body, status: 404 });
    }
    expect(await rules(victim.org_id)).toEqual(before);
  });

  it('two partial changes at once both land; a partial change racing a clear never revives the cap', async () => {
    const org = await seed(env, ['--wallet', '10.00']);
    const user = await productUser(org.service_key, org.app_id, 'racer');
    const email = uniqueEmail('caps-part-r');
    await createMember(env, email, org.org_id, 'admin');
    const [first, second] = await Promise.all([signInTo(gateway, email), signInTo(gateway, email)]);
    const path = `/dashboard/api/product-users/${user}/cap`;
    for (let round = 0; round < 5; round++) {
      expect((await first.request('PUT', path, { amount: '3' })).status).toBe(200);
      const [a, b] = await Promise.all([
        first.request('PUT', path, { credit_mode: 'track_only' }),
        second.request('PUT', path, { overrun_policy: 'reject' }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(await rules(org.org_id)).toEqual([
        {
          scope: 'product_user',
          amount: '3.000000000000',
          per_user_amount: null,
          credit_mode: 'track_only',
          overrun_policy: 'reject',
          status: 'active',
        },
      ]);
      await first.request('PUT', path, { credit_mode: null, overrun_policy: null });

      const [cleared, changed] = await Promise.all([
        first.request('DELETE', path),
        second.request<{ error?: { message: string } }>('PUT', path, { credit_mode: 'disabled' }),
      ]);
      expect(cleared.status).toBe(200);
      const active = (await rules(org.org_id)).filter((rule) => rule.status === 'active');
      if (changed.status === 200) {
        // The change went first: the clear then retired it.
        expect(active).toEqual([]);
      } else {
        expect(changed.status).toBe(400);
        expect(changed.body.error?.message).toBe(
          'amount is required: the product user has no cap of their own yet',
        );
        expect(active).toEqual([]);
      }
      await db.query(`DELETE FROM cap_rules WHERE org_id = $1`, [org.org_id]);
    }
  });
});
