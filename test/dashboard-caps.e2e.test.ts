// Spending caps through the dashboard API at every level (organization, app connection with
// its per-user default, one product user), driven as a browser would, on two gateway
// instances over the real Redis and Postgres: a cap set in the dashboard refuses the next
// inference request on the instance that set it, and on the other once the invalidation
// arrives; clearing it lets requests through again; the CLI and the API read and write the same
// rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { whileRefusing } from './support/refusing-trigger.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import { bearer, getJson, postJson, type JsonResponse, type ErrorBody } from './support/http.js';
import { resolveRef, responseSchema, schemaProblems } from './support/openapi-check.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { firstNot200 } from './support/services.js';
import { usageRecord } from './support/records.js';
import { addCatchAllEndpoint, messageData } from './support/webhook-messages.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';

const { env, db } = isolatedContext('dash-caps', { ownDatabase: true });
let gateways: GatewayProcess[];
let tenant: SeededOrg;

interface CapState {
  scope: string;
  org_id: string;
  app_connection_id: string | null;
  product_end_user_id: string | null;
  cap: {
    cap_rule_id: string;
    amount: string | null;
    per_user_amount: string | null;
    currency: string;
    period: string;
    credit_mode: string | null;
    overrun_policy: string | null;
    status: string;
    updated_at: string;
  } | null;
  connection?: { credit_mode: string; overrun_policy: string; requires_product_user: boolean };
  effective?: {
    source: string;
    cap_rule_id: string;
    app_connection_id: string | null;
    amount: string;
    currency: string;
    period: string;
  } | null;
}

const emails = {
  admin: uniqueEmail('caps-admin'),
  member: uniqueEmail('caps-member'),
  viewer: uniqueEmail('caps-viewer'),
};

const chat = (user?: string) => ({
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hello' }],
  ...(user !== undefined && { user }),
});

function infer(gateway: GatewayProcess, key: string, user?: string) {
  return postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat(user), bearer(key));
}

/** The product user of the tenant's app with this external id (made through the service key). */
async function productUser(org: SeededOrg, externalUserId: string): Promise<string> {
  const response = await fetch(`${gateways[0]!.url}/product-users/by-external-id`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
    body: JSON.stringify({ app_id: org.app_id, external_user_id: externalUserId }),
  });
  const body = (await response.json()) as { product_end_user_id: string };
  return body.product_end_user_id;
}

/** The properties of a response schema, through its $ref. */
function resolvedProperties(document: unknown, schema: Record<string, unknown>) {
  const resolved = typeof schema.$ref === 'string' ? resolveRef(document, schema.$ref) : schema;
  return (resolved.properties ?? {}) as Record<string, unknown>;
}

async function auditActions(objectId: string): Promise<{ action: string; user_id: string }[]> {
  const { rows } = await db.query<{ action: string; user_id: string }>(
    'SELECT action, user_id FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
    [objectId],
  );
  return rows;
}

beforeAll(async () => {
  gateways = await Promise.all([startGateway(env), startGateway(env)]);
  tenant = await seed(env, ['--wallet', '100.00']);
  for (const [role, email] of Object.entries(emails)) {
    await createMember(env, email, tenant.org_id, role);
  }
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('the org cap', () => {
  it('is read as null, set, refuses the next request at once here and on the other instance once the invalidation arrives, and is cleared', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('org-cap');
    await createMember(env, email, org.org_id, 'admin');
    const [here, there] = gateways as [GatewayProcess, GatewayProcess];
    const admin = await signInTo(here, email);
    const path = `/dashboard/api/orgs/${org.org_id}/cap`;

    const none = await admin.get<CapState>(path);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({
      scope: 'org',
      org_id: org.org_id,
      app_connection_id: null,
      product_end_user_id: null,
      cap: null,
    });
    // Both instances have served (and cached "no cap") before the change.
    expect((await infer(here, org.api_key)).status).toBe(200);
    expect((await infer(there, org.api_key)).status).toBe(200);

    const set = await admin.request<CapState & { warnings: string[] }>('PUT', path, {
      amount: '0',
    });
    expect(set.status).toBe(200);
    // at or below what the month spent (the two requests above): the writer is told every
    // request is now refused (decision 481), in the answer /openapi.json describes
    expect(set.body.warnings).toEqual([
      expect.stringMatching(
        /^the cap \(0\.000000000000 USD\) is not above what the organization has spent this period \(\d+\.\d{12} USD\): every request under it is refused until the month turns or the cap is raised$/,
      ),
    ]);
    const document = (await getJson(`${here.url}/openapi.json`)).body;
    const setSchema = responseSchema(document, '/dashboard/api/orgs/{org_id}/cap', 'put', 200);
    expect(schemaProblems(document, setSchema, set.body)).toEqual([]);
    expect(schemaProblems(document, setSchema, { ...set.body, warnings: undefined })).not.toEqual(
      [],
    );
    expect(set.body.cap).toMatchObject({
      cap_rule_id: expect.stringMatching(/^cap_/),
      amount: '0.000000000000',
      per_user_amount: null,
      currency: 'USD',
      period: 'monthly',
      status: 'active',
    });
    const refused = await infer(here, org.api_key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_cap_exceeded');
    expect(refused.body.error.cap_scope).toBe('org');
    // the other instance refuses once the invalidation arrives (served until then; its cache
    // alone would keep the old rule for five minutes)
    const elsewhere = await firstNot200(() => infer(there, org.api_key));
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.error.code).toBe('gw_cap_exceeded');
    expect(await auditActions(set.body.cap!.cap_rule_id)).toEqual([
      { action: 'cap.set', user_id: expect.stringMatching(/^usr_/) },
    ]);

    const cleared = await admin.request<CapState>('DELETE', path);
    expect(cleared.status).toBe(200);
    expect(cleared.body.cap).toBeNull();
    expect((await infer(here, org.api_key)).status).toBe(200);
    const { rows } = await db.query(`SELECT status FROM cap_rules WHERE id = $1`, [
      set.body.cap!.cap_rule_id,
    ]);
    expect(rows).toEqual([{ status: 'inactive' }]);
    expect((await auditActions(set.body.cap!.cap_rule_id)).map((entry) => entry.action)).toEqual([
      'cap.set',
      'cap.clear',
    ]);
    // Clearing again changes nothing and writes nothing.
    expect((await admin.request<CapState>('DELETE', path)).body.cap).toBeNull();
    expect(await auditActions(set.body.cap!.cap_rule_id)).toHaveLength(2);
  });
});

describe('a product user cap', () => {
  it('set through the API with credit mode and overrun policy refuses that user with the spec allowance error, not others; the profile shows it', async () => {
    const admin = await signInTo(gateways[0]!, emails.admin);
    const userId = await productUser(tenant, 'capped-in-dashboard');
    const path = `/dashboard/api/product-users/${userId}/cap`;
    expect((await infer(gateways[0]!, tenant.api_key, 'capped-in-dashboard')).status).toBe(200);

    const set = await admin.request<CapState>('PUT', path, {
      amount: '0.000001',
      credit_mode: 'enforce',
      overrun_policy: 'reject',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      scope: 'product_user',
      org_id: tenant.org_id,
      product_end_user_id: userId,
      cap: {
        amount: '0.000001000000',
        credit_mode: 'enforce',
        overrun_policy: 'reject',
      },
    });
    const refused = await infer(gateways[0]!, tenant.api_key, 'capped-in-dashboard');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('403');
    expect(refused.body.error.provider_specific_fields!.error.code).toBe(
      'gw_product_user_allowance_insufficient',
    );
    expect(refused.body.error.provider_specific_fields!.error.params.cap_amount).toBe(
      '0.000001000000',
    );
    expect((await infer(gateways[0]!, tenant.api_key, 'someone-else')).status).toBe(200);
    const profile = await admin.get<{ cap: { amount: string; cap_rule_id: string } }>(
      `/dashboard/api/product-users/${userId}`,
    );
    expect(profile.body.cap).toMatchObject({
      amount: '0.000001000000',
      cap_rule_id: set.body.cap!.cap_rule_id,
    });

    // Omitted overrides are kept; null ones inherit the connection's again.
    const raised = await admin.request<CapState>('PUT', path, { amount: '50' });
    expect(raised.body.cap).toMatchObject({
      cap_rule_id: set.body.cap!.cap_rule_id,
      amount: '50.000000000000',
      credit_mode: 'enforce',
      overrun_policy: 'reject',
    });
    expect((await infer(gateways[0]!, tenant.api_key, 'capped-in-dashboard')).status).toBe(200);
    const inherited = await admin.request<CapState>('PUT', path, {
      amount: '50',
      credit_mode: null,
      overrun_policy: null,
    });
    expect(inherited.body.cap).toMatchObject({ credit_mode: null, overrun_policy: null });

    const cleared = await admin.request<CapState>('DELETE', path);
    expect(cleared.body.cap).toBeNull();
    const after = await admin.get<Record<string, unknown>>(
      `/dashboard/api/product-users/${userId}`,
    );
    expect(after.body.cap).toBeNull(); // the profile names no cap (decision 279)
    expect(after.body.allowance).toBeUndefined();
  });

  it('set at or below the spend is warned of only where it refuses: its credit mode enforced (decision 484)', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('caps-tracked');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0]!, email);
    const external = 'tracked-over-cap';
    const path = `/dashboard/api/product-users/${await productUser(org, external)}/cap`;
    expect((await infer(gateways[0]!, org.api_key, external)).status).toBe(200);
    const warned = /^the cap \(0\.000000000000 USD\) is not above what the product user has spent/;

    // track_only and disabled refuse nothing: no warning, and the next request is served
    for (const mode of ['track_only', 'disabled']) {
      const set = await admin.request<CapState & { warnings: string[] }>('PUT', path, {
        amount: '0',
        credit_mode: mode,
      });
      expect(set.status).toBe(200);
      expect(set.body.warnings, mode).toEqual([]);
      expect((await infer(gateways[0]!, org.api_key, external)).status, mode).toBe(200);
    }
    // the same cap enforced refuses: warned
    const enforced = await admin.request<CapState & { warnings: string[] }>('PUT', path, {
      amount: '0',
      credit_mode: 'enforce',
    });
    expect(enforced.body.warnings).toEqual([
      expect.stringMatching(
        /\): every request under it is refused once the user's credits are spent, until the user's period turns or the cap is raised$/,
      ),
    ]);
    expect(enforced.body.warnings).toEqual([expect.stringMatching(warned)]);
    expect((await infer(gateways[0]!, org.api_key, external)).status).toBe(403);
    // the user's credits pay past the cap: served while they last (the warning says so)
    const granted = await postJson(
      `${gateways[0]!.url}/product-users/by-external-id/credit-grants`,
      { app_id: org.app_id, external_user_id: external, amount: '1.00' },
      bearer(org.service_key),
    );
    expect(granted.status).toBe(201);
    expect((await infer(gateways[0]!, org.api_key, external)).status).toBe(200);
    // inherited: the connection's mode (track_only) governs it, served, no warning
    const connection = ['--scope', 'app_connection', '--app-connection-id', org.app_connection_id];
    await runCliJson(
      ['cap', 'set', ...connection, '--amount', 'none', '--per-user-amount', '5'],
      env,
    );
    await runCliJson(['cap', 'set', ...connection, '--credit-mode', 'track_only'], env);
    const inherited = await admin.request<CapState & { warnings: string[] }>('PUT', path, {
      amount: '0',
      credit_mode: null,
    });
    expect(inherited.body.cap).toMatchObject({ credit_mode: null });
    expect(inherited.body.warnings).toEqual([]);
    expect((await infer(gateways[0]!, org.api_key, external)).status).toBe(200);
  });
});

describe('an app-connection cap and its per-user default', () => {
  it('caps the connection, its users by default, or only its users (amount null); applies the connection settings at once', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('conn-cap');
    await createMember(env, email, org.org_id, 'owner');
    const admin = await signInTo(gateways[0]!, email);
    const path = `/dashboard/api/connections/${org.app_connection_id}/cap`;

    const none = await admin.get<CapState>(path);
    expect(none.body).toEqual({
      scope: 'app_connection',
      org_id: org.org_id,
      app_connection_id: org.app_connection_id,
      product_end_user_id: null,
      cap: null,
      connection: {
        credit_mode: 'enforce',
        overrun_policy: 'limit_output',
        requires_product_user: false,
      },
    });

    // Only the per-user default: each user gets a nano-unit, the connection itself is uncapped.
    const perUserOnly = await admin.request<CapState>('PUT', path, {
      amount: null,
      per_user_amount: '0.000000001',
      overrun_policy: 'reject',
    });
    expect(perUserOnly.status).toBe(200);
    expect(perUserOnly.body.cap).toMatchObject({ amount: null, per_user_amount: '0.000000001000' });
    expect(perUserOnly.body.connection).toMatchObject({ overrun_policy: 'reject' });
    const userRefused = await infer(gateways[0]!, org.api_key, 'per-user-default');
    expect(userRefused.status).toBe(403);
    expect(userRefused.body.error.provider_specific_fields!.error.code).toBe(
      'gw_product_user_allowance_insufficient',
    );
    // A request without a product user has no allowance to check, and no connection cap.
    expect((await infer(gateways[0]!, org.api_key)).status).toBe(200);

    // The combined cap, the per-user default kept (omitted), then removed (null).
    const combined = await admin.request<CapState>('PUT', path, { amount: '0' });
    expect(combined.body.cap).toMatchObject({
      amount: '0.000000000000',
      per_user_amount: '0.000000001000',
    });
    const connectionRefused = await infer(gateways[0]!, org.api_key);
    expect(connectionRefused.status).toBe(403);
    expect(connectionRefused.body.error).toMatchObject({
      code: 'gw_cap_exceeded',
      cap_scope: 'app_connection',
    });
    const withoutDefault = await admin.request<CapState>('PUT', path, {
      amount: '10',
      per_user_amount: null,
    });
    expect(withoutDefault.body.cap).toMatchObject({
      amount: '10.000000000000',
      per_user_amount: null,
    });
    expect((await infer(gateways[0]!, org.api_key, 'per-user-default')).status).toBe(200);

    // Neither amount is a cap that caps nothing: refused, nothing changed.
    const empty = await admin.request<ErrorBody>('PUT', path, {
      amount: null,
      per_user_amount: null,
    });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe('gw_invalid_request');
    expect((await admin.get<CapState>(path)).body.cap).toMatchObject({ amount: '10.000000000000' });

    // The connection's attribution requirement reaches its keys at once.
    const requires = await admin.request<CapState>('PUT', path, {
      amount: '10',
      requires_product_user: true,
    });
    expect(requires.body.connection).toMatchObject({ requires_product_user: true });
    const unattributed = await infer(gateways[0]!, org.api_key);
    expect(unattributed.status).toBe(400);
    expect(unattributed.body.error.code).toBe('gw_product_user_credits_required');
  });
});

describe("a product user capped by their connection's per-user default", () => {
  it('reads the default as `effective` (cap: null is their own), from the API and gw cap show; another org gets 404', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('effective-cap');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0]!, email);
    const connection = await runCliJson<CapState>(
      [
        ...['cap', 'set', '--scope', 'app_connection'],
        ...['--app-connection-id', org.app_connection_id, '--amount', 'none'],
        ...['--per-user-amount', '1.00'],
      ],
      env,
    );
    // The user's requests attribute them to the connection whose default caps them.
    expect((await infer(gateways[0]!, org.api_key, 'defaulted-user')).status).toBe(200);
    const userId = await productUser(org, 'defaulted-user');
    const path = `/dashboard/api/product-users/${userId}/cap`;
    const byDefault = {
      source: 'app_connection_per_user_default',
      cap_rule_id: connection.cap!.cap_rule_id,
      app_connection_id: org.app_connection_id,
      amount: '1.000000000000',
      currency: 'USD',
      period: 'monthly',
    };

    const read = await admin.get<CapState>(path);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      scope: 'product_user',
      org_id: org.org_id,
      app_connection_id: null,
      product_end_user_id: userId,
      cap: null,
      effective: byDefault,
    });
    // The profile names the same cap.
    const profile = await admin.get<{ cap: { amount: string; cap_rule_id: string } }>(
      `/dashboard/api/product-users/${userId}`,
    );
    expect(profile.body.cap).toMatchObject({
      amount: byDefault.amount,
      cap_rule_id: byDefault.cap_rule_id,
    });
    // The route's declared schema (and so /openapi.json) has the field.
    const document = (await getJson(`${gateways[0]!.url}/openapi.json`)).body;
    const declared = responseSchema(
      document,
      '/dashboard/api/product-users/{product_end_user_id}/cap',
      'get',
      200,
    );
    expect(schemaProblems(document, declared, read.body)).toEqual([]);
    // Named there with its fields, not only let through.
    const effectiveSchema = JSON.stringify(resolvedProperties(document, declared).effective);
    expect(effectiveSchema).toContain('app_connection_per_user_default');
    const user = ['--scope', 'product_user', '--app-id', org.app_id];
    const shown = await runCliJson<CapState>(
      ['cap', 'show', ...user, '--external-user-id', 'defaulted-user'],
      env,
    );
    expect(shown).toEqual(read.body);

    // A cap of their own is what caps them then; cleared, the default again.
    const own = await admin.request<CapState>('PUT', path, { amount: '3' });
    expect(own.body.effective).toEqual({
      source: 'product_user',
      cap_rule_id: own.body.cap!.cap_rule_id,
      app_connection_id: null,
      amount: '3.000000000000',
      currency: 'USD',
      period: 'monthly',
    });
    const cleared = await admin.request<CapState>('DELETE', path);
    expect(cleared.body).toMatchObject({ cap: null, effective: byDefault });
    // Without the default, nothing caps them.
    await runCliJson(
      ['cap', 'clear', '--scope', 'app_connection', '--app-connection-id', org.app_connection_id],
      env,
    );
    expect((await admin.get<CapState>(path)).body).toMatchObject({ cap: null, effective: null });

    // An admin of another organization: 404, as for any of its objects.
    const stranger = uniqueEmail('effective-stranger');
    const otherOrg = await seed(env);
    await createMember(env, stranger, otherOrg.org_id, 'admin');
    const outsider = await signInTo(gateways[0]!, stranger);
    const refused = await outsider.get<ErrorBody>(path);
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('gw_not_found');
    expect(JSON.stringify(refused.body)).not.toContain('1.000000000000');
  });
});

describe('who may change caps', () => {
  it('a viewer and a member read but cannot set or clear (403 gw_role_forbidden); writes need CSRF and Origin; nothing changes', async () => {
    const path = `/dashboard/api/orgs/${tenant.org_id}/cap`;
    for (const role of ['viewer', 'member'] as const) {
      const client = await signInTo(gateways[0]!, emails[role]);
      expect((await client.get<CapState>(path)).status).toBe(200);
      for (const method of ['PUT', 'DELETE']) {
        const refused = await client.request<ErrorBody>(
          method,
          path,
          method === 'PUT' ? { amount: '1' } : undefined,
        );
        expect(refused.status, `${role} ${method}`).toBe(403);
        expect(refused.body.error.code).toBe('gw_role_forbidden');
      }
    }
    const admin = await signInTo(gateways[0]!, emails.admin);
    const noToken = await admin.request<ErrorBody>('PUT', path, { amount: '1' }, { csrf: false });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
    const foreign = await admin.request<ErrorBody>(
      'PUT',
      path,
      { amount: '1' },
      { origin: 'https://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('gw_origin_not_allowed');
    const { rows } = await db.query(
      `SELECT 1 FROM cap_rules WHERE org_id = $1 AND scope = 'org' AND status = 'active'`,
      [tenant.org_id],
    );
    expect(rows).toEqual([]);
  });
});

describe('bad cap input', () => {
  it('answers 400 naming the field, gw_amount_out_of_range past the limit, and changes nothing', async () => {
    const admin = await signInTo(gateways[0]!, emails.admin);
    const path = `/dashboard/api/orgs/${tenant.org_id}/cap`;
    const cases: [unknown, number, string, RegExp][] = [
      [{ amount: '-1' }, 400, 'gw_invalid_request', /^amount: /],
      [{ amount: '1.0000000001' }, 400, 'gw_invalid_request', /^amount: .*nano-unit/],
      [{ amount: 5 }, 400, 'gw_invalid_request', /^amount: /],
      [{ amount: '1000000.000000001' }, 400, 'gw_amount_out_of_range', /^amount: /],
      [{}, 400, 'gw_invalid_request', /^amount: /],
      [{ amount: '1', per_user_amount: '1' }, 400, 'gw_invalid_request', /per_user_amount/],
      [{ amount: null }, 400, 'gw_invalid_request', /^amount: /],
    ];
    for (const [body, status, code, message] of cases) {
      const answer: JsonResponse<ErrorBody> = await admin.request<ErrorBody>('PUT', path, body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.error.code, JSON.stringify(body)).toBe(code);
      expect(answer.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    const userPath = `/dashboard/api/product-users/${await productUser(tenant, 'bad-input')}/cap`;
    const badMode = await admin.request<ErrorBody>('PUT', userPath, {
      amount: '1',
      credit_mode: 'sometimes',
    });
    expect(badMode.status).toBe(400);
    expect(badMode.body.error.message).toMatch(/^credit_mode: /);
    const { rows } = await db.query(
      `SELECT 1 FROM cap_rules WHERE org_id = $1 AND status = 'active'`,
      [tenant.org_id],
    );
    expect(rows).toEqual([]);
  });
});

describe('one service for the CLI and the API', () => {
  it('gw cap set/show/clear and the API read and write the same rule; CLI changes are audited as cli', async () => {
    const admin = await signInTo(gateways[0]!, emails.admin);
    const args = ['--scope', 'app_connection', '--app-connection-id', tenant.app_connection_id];
    const fromCli = await runCliJson<CapState>(
      ['cap', 'set', ...args, '--amount', '25', '--per-user-amount', '2'],
      env,
    );
    const path = `/dashboard/api/connections/${tenant.app_connection_id}/cap`;
    const fromApi = await admin.get<CapState>(path);
    // the CLI prints the set's answer: the level and its warnings (none: nothing spent)
    expect({ ...fromApi.body, warnings: [] }).toEqual(fromCli);
    expect(await runCliJson<CapState>(['cap', 'show', ...args], env)).toEqual(fromApi.body);
    expect(await auditActions(fromCli.cap!.cap_rule_id)).toEqual([
      { action: 'cap.set', user_id: 'cli' },
    ]);
    const perUserOnly = await runCliJson<CapState>(
      ['cap', 'set', ...args, '--amount', 'none'],
      env,
    );
    expect(perUserOnly.cap).toMatchObject({ amount: null, per_user_amount: '2.000000000000' });
    const cleared = await runCliJson<CapState>(['cap', 'clear', ...args], env);
    expect(cleared.cap).toBeNull();
    expect((await admin.get<CapState>(path)).body.cap).toBeNull();
    const missing = await runCli(
      [
        'cap',
        'show',
        '--scope',
        'product_user',
        '--app-id',
        tenant.app_id,
        '--external-user-id',
        'never-seen',
      ],
      env,
    );
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stderr).error.code).toBe('gw_not_found');
    const { rowCount } = await db.query(
      'SELECT 1 FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [tenant.app_id, 'never-seen'],
    );
    expect(rowCount).toBe(0);
  });
});

describe('a setting changed alone keeps the amount (decision 315)', () => {
  /** The active rule of the org's product user `externalUserId`, as Postgres holds it. */
  async function userRuleRows(org: SeededOrg, externalUserId: string) {
    const { rows } = await db.query(
      `SELECT r.amount::text, r.credit_mode, r.overrun_policy
         FROM cap_rules r JOIN product_users u ON u.id = r.product_user_id
        WHERE u.app_id = $1 AND u.external_user_id = $2 AND r.status = 'active'`,
      [org.app_id, externalUserId],
    );
    return rows;
  }

  it('gw cap set --credit-mode alone changes a product user cap and keeps its amount; a user without a cap needs --amount', async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const user = (id: string) => [
      ...['cap', 'set', '--scope', 'product_user', '--app-id', org.app_id],
      ...['--external-user-id', id],
    ];
    await runCliJson([...user('capped'), '--amount', '3.5', '--overrun-policy', 'reject'], env);
    const changed = await runCliJson<CapState>(
      [...user('capped'), '--credit-mode', 'track_only'],
      env,
    );
    expect(changed.cap).toMatchObject({
      amount: '3.500000000000',
      credit_mode: 'track_only',
      overrun_policy: 'reject',
    });
    expect(await userRuleRows(org, 'capped')).toEqual([
      { amount: '3.500000000000', credit_mode: 'track_only', overrun_policy: 'reject' },
    ]);

    // Nothing to set: the flags the scope's cap set takes are named, and what removes a cap.
    const nothing = await runCli(user('capped'), env);
    expect(nothing.code).toBe(2);
    expect(JSON.parse(nothing.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message:
        'cap set: give --amount, --credit-mode or --overrun-policy (gw cap clear removes the cap)',
    });
    const nothingOnConnection = await runCli(
      ['cap', 'set', '--scope', 'app_connection', '--app-connection-id', org.app_connection_id],
      env,
    );
    expect(JSON.parse(nothingOnConnection.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message:
        'cap set: give --amount, --per-user-amount, --credit-mode, --overrun-policy or --requires-product-user (gw cap clear removes the cap)',
    });
    const nothingOnOrg = await runCli(
      ['cap', 'set', '--scope', 'org', '--org-id', org.org_id],
      env,
    );
    expect(JSON.parse(nothingOnOrg.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message: 'cap set: give --amount (gw cap clear removes the cap)',
    });
    const uncapped = await runCli([...user('uncapped'), '--credit-mode', 'track_only'], env);
    expect(uncapped.code).toBe(2);
    expect(JSON.parse(uncapped.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message: '--amount is required: the product user has no cap of their own yet',
    });
    expect(await userRuleRows(org, 'uncapped')).toEqual([]);
    // A user covered by their connection's per-user default is told so: "no cap" would read
    // as "not capped".
    await runCliJson(
      [
        ...[
          'cap',
          'set',
          '--scope',
          'app_connection',
          '--app-connection-id',
          org.app_connection_id,
        ],
        ...['--amount', 'none', '--per-user-amount', '1.5'],
      ],
      env,
    );
    expect((await infer(gateways[0]!, org.api_key, 'defaulted')).status).toBe(200);
    const defaulted = await runCli([...user('defaulted'), '--credit-mode', 'track_only'], env);
    expect(defaulted.code).toBe(2);
    expect(JSON.parse(defaulted.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message:
        "--amount is required: the product user has no cap of their own yet, only their connection's per-user default (1.5 USD a month)",
    });
    expect(await userRuleRows(org, 'defaulted')).toEqual([]);
    // A refused command changes nothing: the product user it named was not created either.
    const badFlag = await runCli(
      [...user('misspelled'), '--amount', '2', '--credit-mode', 'enforced'],
      env,
    );
    expect(badFlag.code).toBe(2);
    const created = await db.query(
      `SELECT external_user_id FROM product_users
        WHERE app_id = $1 AND external_user_id IN ('uncapped', 'misspelled')`,
      [org.app_id],
    );
    expect(created.rows).toEqual([]);
    expect(await userRuleRows(org, 'capped')).toEqual([
      { amount: '3.500000000000', credit_mode: 'track_only', overrun_policy: 'reject' },
    ]);

    // inherit removes a product user's override: the connection's setting applies again.
    const inherited = await runCliJson<CapState>(
      [...user('capped'), '--overrun-policy', 'inherit'],
      env,
    );
    expect(inherited.cap).toMatchObject({ amount: '3.500000000000', overrun_policy: null });
    expect(await userRuleRows(org, 'capped')).toEqual([
      { amount: '3.500000000000', credit_mode: 'track_only', overrun_policy: null },
    ]);
    // Only a product user's cap has an override to remove.
    const onConnection = await runCli(
      [
        ...['cap', 'set', '--scope', 'app_connection'],
        ...['--app-connection-id', org.app_connection_id, '--credit-mode', 'inherit'],
      ],
      env,
    );
    expect(onConnection.code).toBe(2);
    expect(JSON.parse(onConnection.stderr).error).toEqual({
      code: 'gw_invalid_request',
      message: '--credit-mode inherit is for a product_user cap (it removes its override)',
    });
  });

  it("a connection's credit mode changes alone from the CLI and the API, amounts kept; the API refuses a first cap without an amount as the CLI does", async () => {
    const org = await seed(env, ['--wallet', '100.00']);
    const email = uniqueEmail('caps-keep');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0]!, email);
    const connection = ['--scope', 'app_connection', '--app-connection-id', org.app_connection_id];
    await runCliJson(
      ['cap', 'set', ...connection, '--amount', '25', '--per-user-amount', '2'],
      env,
    );
    await runCliJson(['cap', 'set', ...connection, '--credit-mode', 'track_only'], env);
    const connectionRow = async () =>
      (
        await db.query(
          `SELECT r.amount::text, r.per_user_amount::text, c.credit_mode, c.overrun_policy
             FROM app_connections c
             JOIN cap_rules r ON r.app_connection_id = c.id AND r.status = 'active'
            WHERE c.id = $1`,
          [org.app_connection_id],
        )
      ).rows;
    expect(await connectionRow()).toEqual([
      {
        amount: '25.000000000000',
        per_user_amount: '2.000000000000',
        credit_mode: 'track_only',
        overrun_policy: 'limit_output',
      },
    ]);
    const path = `/dashboard/api/connections/${org.app_connection_id}/cap`;
    const fromApi = await admin.request<CapState>('PUT', path, { overrun_policy: 'reject' });
    expect(fromApi.status).toBe(200);
    expect(await connectionRow()).toEqual([
      {
        amount: '25.000000000000',
        per_user_amount: '2.000000000000',
        credit_mode: 'track_only',
        overrun_policy: 'reject',
      },
    ]);

    const userPath = `/dashboard/api/product-users/${await productUser(org, 'api-uncapped')}/cap`;
    const refused = await admin.request<ErrorBody>('PUT', userPath, { credit_mode: 'disabled' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'gw_invalid_request',
      message: 'amount is required: the product user has no cap of their own yet',
    });
    expect(await userRuleRows(org, 'api-uncapped')).toEqual([]);

    // An empty body sets nothing: the answer names the fields this level's body takes
    // (decision 594), at each level, capped or not, and changes nothing. The org's body takes
    // one field, required: its refusal says it is the only one (decision 597).
    const cappedPath = `/dashboard/api/product-users/${await productUser(org, 'api-capped')}/cap`;
    expect((await admin.request('PUT', cappedPath, { amount: '4' })).status).toBe(200);
    const before = (await db.query('SELECT * FROM cap_rules WHERE org_id = $1', [org.org_id])).rows;
    const nothing = (fields: string) =>
      `the body sets nothing: give ${fields} (DELETE on this path removes the cap)`;
    for (const [levelPath, message] of [
      [
        path,
        nothing('amount, per_user_amount, credit_mode, overrun_policy or requires_product_user'),
      ],
      [userPath, nothing('amount, credit_mode or overrun_policy')],
      [cappedPath, nothing('amount, credit_mode or overrun_policy')],
      [
        `/dashboard/api/orgs/${org.org_id}/cap`,
        'amount: is required, the only field this body takes (DELETE on this path removes the cap)',
      ],
    ] as const) {
      const empty = await admin.request<ErrorBody>('PUT', levelPath, {});
      expect(empty.status, levelPath).toBe(400);
      expect(empty.body, levelPath).toEqual({ error: { code: 'gw_invalid_request', message } });
    }
    expect(
      (await db.query('SELECT * FROM cap_rules WHERE org_id = $1', [org.org_id])).rows,
    ).toEqual(before);
  });
});

describe('the marks a cap set passes (decision 307)', () => {
  /** A seeded org whose endpoint takes every event, and `spentNano` of this month in its ledger. */
  async function spentOrg(spentNano: bigint): Promise<SeededOrg> {
    const org = await seed(env, ['--wallet', '100.00']);
    await addCatchAllEndpoint(db, org.org_id);
    await new PostgresUsageSink(db).write([
      usageRecord(org.org_id, spentNano, {
        appId: org.app_id,
        appConnectionId: org.app_connection_id,
      }),
    ]);
    return org;
  }

  /** The cap.threshold messages of `orgId`: scope, threshold and amount of each. */
  async function marks(orgId: string): Promise<string[]> {
    const events = await messageData<{ scope: string; threshold: number; amount: string }>(
      db,
      orgId,
      'cap.threshold',
    );
    return events.map((data) => `${data.scope} ${data.threshold} of ${data.amount}`);
  }

  it('a cap set whose marks cannot be written is not set, and says so; set again, it fires them', async () => {
    const org = await spentOrg(9_000_000_000n);
    const email = uniqueEmail('marks-fail');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0]!, email);
    const path = `/dashboard/api/orgs/${org.org_id}/cap`;
    const trigger = `refuse_${org.org_id.toLowerCase()}`;
    await whileRefusing(
      db,
      {
        name: trigger,
        table: 'webhook_messages',
        before: 'INSERT',
        when: `NEW.org_id = '${org.org_id}'`,
      },
      async () => {
        const failed = await admin.request<ErrorBody>('PUT', path, { amount: '10' });
        expect(failed.status).toBe(500);
        // An error answer leaves the org as it was: no cap in force, none audited.
        expect((await admin.get<CapState>(path)).body.cap).toBeNull();
        const { rows } = await db.query(
          `SELECT 1 FROM dashboard_audit_log WHERE org_id = $1 AND action = 'cap.set'`,
          [org.org_id],
        );
        expect(rows).toEqual([]);
      },
    );
    const set = await admin.request<CapState>('PUT', path, { amount: '10' });
    expect(set.status).toBe(200);
    expect(await marks(org.org_id)).toEqual(['org 0.8 of 10.000000000000']);
  });

  it("an admin of another org can neither set B's caps nor fire B's marks; gw cap set fires them once", async () => {
    const other = await spentOrg(9_000_000_000n);
    const victim = await spentOrg(9_000_000_000n);
    const victimUser = await productUser(victim, 'cross-tenant');
    const email = uniqueEmail('marks-cross');
    await createMember(env, email, other.org_id, 'admin');
    const admin = await signInTo(gateways[0]!, email);
    for (const path of [
      `/dashboard/api/orgs/${victim.org_id}/cap`,
      `/dashboard/api/connections/${victim.app_connection_id}/cap`,
      `/dashboard/api/product-users/${victimUser}/cap`,
    ]) {
      const refused = await admin.request<ErrorBody>('PUT', path, { amount: '1' });
      expect(refused.status, path).toBe(404);
    }
    const { rows } = await db.query(`SELECT 1 FROM cap_rules WHERE org_id = ANY($1)`, [
      [other.org_id, victim.org_id],
    ]);
    expect(rows).toEqual([]);
    expect(await marks(other.org_id)).toEqual([]);
    expect(await marks(victim.org_id)).toEqual([]);

    const args = ['--scope', 'app_connection', '--app-connection-id', victim.app_connection_id];
    for (let round = 0; round < 2; round++) {
      await runCliJson<CapState>(['cap', 'set', ...args, '--amount', '10'], env);
    }
    expect(await marks(victim.org_id)).toEqual(['app_connection 0.8 of 10.000000000000']);
    expect(await marks(other.org_id)).toEqual([]);
  });
});
