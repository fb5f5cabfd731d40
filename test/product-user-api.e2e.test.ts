// The service-key management API, as an app's backend would call it.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailHash } from '../src/product-users/directory.js';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import { bearer, getJson, postJson, type ErrorBody } from './support/http.js';
import {
  type GatewayProcess,
  runCli,
  runCliJson,
  seed,
  type SeededOrg,
  setProductUserCap,
  startGateway,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('puapi');
let gateway: GatewayProcess;
let org: SeededOrg;

interface ProfileBody {
  [field: string]: unknown;
  allowance: Record<string, string>;
  cap: Record<string, string>;
  credits: Record<string, unknown>;
  usage: {
    this_month: Record<string, unknown>;
    total: Record<string, unknown> & { request_count?: number };
  };
}
type GrantBody = Record<string, unknown> & { grant_id: string };
interface OpenApiObject {
  type?: string | string[];
  properties: Record<string, { type?: string | string[]; properties?: Record<string, unknown> }>;
  required: string[];
}
const DECIMAL = /^\d+\.\d{12}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const profileUrl = (appId: string, externalUserId: string) =>
  `${gateway.url}/product-users/by-external-id?app_id=${encodeURIComponent(appId)}&external_user_id=${encodeURIComponent(externalUserId)}`;

async function put(body: Record<string, unknown>, key = org.service_key) {
  const response = await fetch(`${gateway.url}/product-users/by-external-id`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...bearer(key) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('service-key authentication', () => {
  it('401 gw_malformed_or_missing_service_key without a key, with a malformed one, or with an API key', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, bearer(org.api_key)]) {
      const response = await getJson<ErrorBody>(profileUrl(org.app_id, 'anyone'), headers);
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('gw_malformed_or_missing_service_key');
    }
  });

  it('401 gw_unknown_service_key for a key nobody issued', async () => {
    const response = await getJson<ErrorBody>(
      profileUrl(org.app_id, 'anyone'),
      bearer(`gw_svc_${'x'.repeat(43)}`),
    );
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('gw_unknown_service_key');
  });

  it('403 gw_service_key_scope_required for a read-only key on a write route', async () => {
    const readOnly = await runCliJson<{ key: string }>(
      ['service-key', 'create', '--org-id', org.org_id, '--scopes', 'product_users:read'],
      env,
    );
    const response = await put({ app_id: org.app_id, external_user_id: 'scoped' }, readOnly.key);
    expect(response.status).toBe(403);
    expect((response.body as ErrorBody).error.code).toBe('gw_service_key_scope_required');
    expect((await getJson(profileUrl(org.app_id, 'scoped'), bearer(readOnly.key))).status).toBe(
      404,
    );
  });

  it('403 gw_service_key_inactive once revoked, disabled or expired', async () => {
    const revoked = await runCliJson<{ id: string; key: string }>(
      ['service-key', 'create', '--org-id', org.org_id],
      env,
    );
    const disabled = await runCliJson<{ id: string; key: string }>(
      ['service-key', 'create', '--org-id', org.org_id],
      env,
    );
    // A key cannot be issued expired (below): this one expires a moment after it is issued
    // (3 s: the CLI's own work may take a second on a loaded machine).
    const expiresAt = new Date(Date.now() + 3000);
    const expired = await runCliJson<{ key: string }>(
      ['service-key', 'create', '--org-id', org.org_id, '--expires-at', expiresAt.toISOString()],
      env,
    );
    await sleep(Math.max(0, expiresAt.getTime() - Date.now() + 50));
    await runCliJson(['service-key', 'revoke', '--id', revoked.id], env);
    await runCliJson(['service-key', 'disable', '--id', disabled.id], env);
    for (const key of [revoked.key, disabled.key, expired.key]) {
      const response = await getJson<ErrorBody>(profileUrl(org.app_id, 'anyone'), bearer(key));
      expect(response.status).toBe(403);
      expect(response.body.error.code).toBe('gw_service_key_inactive');
    }
  });

  it('gw service-key create refuses an expiry that has passed, and issues nothing', async () => {
    const count = async () =>
      (
        await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM service_keys WHERE org_id = $1',
          [org.org_id],
        )
      ).rows[0]!.n;
    const before = await count();
    const refused = await runCli(
      ['service-key', 'create', '--org-id', org.org_id, '--expires-at', '2020-01-01T00:00:00Z'],
      env,
    );
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr)).toEqual({
      error: {
        code: 'gw_invalid_request',
        message:
          '--expires-at must be in the future: 2020-01-01T00:00:00.000Z has passed (a key issued expired is refused on every call)',
      },
    });
    expect(await count()).toBe(before);
  });

  it('refuses a service key on inference routes and does not serve the /api/v1 prefix', async () => {
    const inference = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      bearer(org.service_key),
    );
    expect(inference.status).toBe(401);
    const prefixed = await fetch(
      `${gateway.url}/api/v1/product-users/by-external-id?app_id=${org.app_id}&external_user_id=x`,
      {
        headers: bearer(org.service_key),
      },
    );
    expect(prefixed.status).toBe(404);
  });
});

describe('GET /product-users/by-external-id', () => {
  it('400 gw_invalid_app_id / gw_invalid_external_user_id and 404 gw_product_user_not_found', async () => {
    // A missing id and an empty or blank one read alike.
    const appRequired = { error: { code: 'gw_invalid_app_id', message: 'app_id: is required' } };
    const userRequired = {
      error: { code: 'gw_invalid_external_user_id', message: 'external_user_id: is required' },
    };
    for (const [query, expected] of [
      ['external_user_id=u', appRequired],
      ['app_id=&external_user_id=u', appRequired],
      ['app_id=%20&external_user_id=u', appRequired],
      [`app_id=${org.app_id}`, userRequired],
      [`app_id=${org.app_id}&external_user_id=`, userRequired],
      [`app_id=${org.app_id}&external_user_id=%20%20`, userRequired],
    ] as const) {
      const refused = await getJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id?${query}`,
        bearer(org.service_key),
      );
      expect([query, refused.status, refused.body]).toEqual([query, 400, expected]);
    }
    const missing = await getJson<ErrorBody>(
      profileUrl(org.app_id, 'never-seen'),
      bearer(org.service_key),
    );
    expect([missing.status, missing.body.error.code]).toEqual([404, 'gw_product_user_not_found']);
    // Read-only: still not there.
    expect(
      (await getJson(profileUrl(org.app_id, 'never-seen'), bearer(org.service_key))).status,
    ).toBe(404);
    // A parameter given twice names no one user: refused, on both read routes.
    for (const path of ['', '/credit-summary']) {
      const twice = await getJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id${path}?app_id=${org.app_id}&external_user_id=alice&external_user_id=bob`,
        bearer(org.service_key),
      );
      expect([twice.status, twice.body.error.code]).toEqual([400, 'gw_invalid_request']);
      expect(twice.body.error.message).toBe('query parameter "external_user_id": given twice');
      // A filter these routes do not have is refused, not ignored.
      const unknown = await getJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id${path}?app_id=${org.app_id}&external_user_id=alice&status=blocked`,
        bearer(org.service_key),
      );
      expect([unknown.status, unknown.body.error.code]).toEqual([400, 'gw_invalid_request']);
      expect(unknown.body.error.message).toBe(
        `query parameter "status": not one this route takes (app_id, external_user_id${path ? ', currency' : ''})`,
      );
    }
  });

  it('answers cap: null and no allowance for a user no cap applies to; last_app_connection_id is "" before any call', async () => {
    const created = await put({ app_id: org.app_id, external_user_id: 'uncapped' });
    expect(created.status).toBe(201);
    const profile = await getJson<Record<string, unknown>>(
      profileUrl(org.app_id, 'uncapped'),
      bearer(org.service_key),
    );
    expect(profile.status).toBe(200);
    expect(profile.body.cap).toBeNull();
    expect('allowance' in profile.body).toBe(false);
    expect(profile.body.last_app_connection_id).toBe('');
    expect(created.body.cap).toBeNull();
  });

  it('documents in /openapi.json every field the profile returns, allowance and cap with their shapes', async () => {
    const user = 'documented';
    await setProductUserCap(env, org.app_id, user, '2');
    const profile = await getJson<Record<string, Record<string, unknown>>>(
      profileUrl(org.app_id, user),
      bearer(org.service_key),
    );
    const spec = await getJson<{
      paths: Record<
        string,
        {
          get: {
            responses: Record<string, { content: Record<string, { schema: OpenApiObject }> }>;
          };
        }
      >;
    }>(`${gateway.url}/openapi.json`);
    const schema =
      spec.body.paths['/product-users/by-external-id']!.get.responses['200']!.content[
        'application/json'
      ]!.schema;
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(profile.body).sort());
    for (const part of ['allowance', 'cap'] as const) {
      expect(Object.keys(schema.properties[part]!.properties!).sort()).toEqual(
        Object.keys(profile.body[part]!).sort(),
      );
    }
    expect(schema.required).toContain('cap');
    expect(schema.required).not.toContain('allowance');
    expect(schema.properties.cap!.type).toEqual(['object', 'null']);
  });

  it('returns every profile field with its type, the allowance formulas and the usage totals', async () => {
    const user = 'profile-user';
    await setProductUserCap(env, org.app_id, user, '1.00');
    await runCliJson(
      ['credits', 'grant', '--app-id', org.app_id, '--external-user-id', user, '--amount', '0.25'],
      env,
    );
    const chat = await postJson<{ usage: { prompt_tokens: number; completion_tokens: number } }>(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello mock:output_tokens=8' }],
        user,
      },
      bearer(org.api_key),
    );
    expect(chat.status).toBe(200);
    const costNano = BigInt(chat.body.usage.prompt_tokens) * 150n + 8n * 600n;
    const decimal = (nano: bigint) =>
      `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}000`;

    const profile = await eventually(async () => {
      const response = await getJson<ProfileBody>(
        profileUrl(org.app_id, user),
        bearer(org.service_key),
      );
      return response.body.usage?.total?.request_count === 1 ? response : undefined;
    });
    expect(profile.status).toBe(200);
    const body = profile.body;
    expect(body).toMatchObject({
      org_id: org.org_id,
      app_id: org.app_id,
      external_user_id: user,
      status: 'active',
    });
    expect(body.product_end_user_id).toMatch(/^pu_/);
    expect(typeof body.display_name).toBe('string');
    expect(typeof body.email_hash).toBe('string');
    expect(body.metadata).toEqual({});
    expect(body.allowance_starts_at).toBeNull();
    expect(body.last_app_connection_id).toBe(org.app_connection_id);

    const allowance = body.allowance;
    expect(allowance).toMatchObject({
      app_connection_id: org.app_connection_id,
      cap_source: 'product_end_user',
      credit_mode: 'enforce',
      overrun_policy: 'limit_output',
      currency: 'USD',
      period: 'monthly',
      cap_amount: '1.000000000000',
      spent_this_period: decimal(costNano),
      remaining_base_allowance: decimal(1_000_000_000n - costNano),
      available_credits: '0.250000000000',
      available_allowance: decimal(1_250_000_000n - costNano),
    });
    expect(allowance.cap_rule_id).toMatch(/^cap_/);
    expect(allowance.period_start).toMatch(TIMESTAMP);
    expect(allowance.period_end).toMatch(TIMESTAMP);
    expect(body.cap).toMatchObject({
      source: 'product_end_user',
      cap_rule_id: allowance.cap_rule_id,
      amount: '1.000000000000',
      currency: 'USD',
      period: 'monthly',
      spent_this_period: decimal(costNano),
      reset_at: allowance.period_end,
      status: 'active',
    });
    expect(body.cap.updated_at).toMatch(TIMESTAMP);
    expect(body.credits).toMatchObject({
      currency: 'USD',
      available_credits: '0.250000000000',
      active_grant_count: 1,
      expiring_soon_amount: '0.000000000000',
      spent_this_month: '0.000000000000',
      spent_total: '0.000000000000',
      last_used_at: null,
    });
    expect(body.credits.last_grant_at).toMatch(TIMESTAMP);
    expect(body.usage.total).toEqual({
      sell_cost: decimal(costNano),
      input_tokens: chat.body.usage.prompt_tokens,
      output_tokens: 8,
      total_tokens: chat.body.usage.prompt_tokens + 8,
      request_count: 1,
    });
    expect(body.usage.this_month).toEqual(body.usage.total);
    for (const field of [
      'cap_amount',
      'spent_this_period',
      'remaining_base_allowance',
      'available_credits',
      'available_allowance',
    ]) {
      expect(allowance[field]).toMatch(DECIMAL);
    }
  });
});

describe('PUT /product-users/by-external-id', () => {
  it('creates (201) then updates (200); stores the e-mail only as its hash', async () => {
    const created = await put({
      app_id: org.app_id,
      external_user_id: 'put-user',
      display_name: 'Grace',
      email: 'grace@example.com',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      display_name: 'Grace',
      external_user_id: 'put-user',
      allowance_starts_at: null,
    });
    expect(created.body.email_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(JSON.stringify(created.body)).not.toContain('grace@example.com');
    const updated = await put({
      app_id: org.app_id,
      external_user_id: 'put-user',
      display_name: 'Grace H.',
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      display_name: 'Grace H.',
      email_hash: created.body.email_hash,
    });
  });

  it('trims the e-mail before checking and hashing it, refuses a malformed one, and clears it with ""', async () => {
    const user = 'mail-rules';
    const trimmed = await put({
      app_id: org.app_id,
      external_user_id: user,
      email: ' Alice@Example.com ',
    });
    expect(trimmed.status).toBe(201);
    expect(trimmed.body.email_hash).toBe(emailHash('alice@example.com'));
    const junk = await put({ app_id: org.app_id, external_user_id: user, email: 'not-an-email' });
    expect([junk.status, (junk.body as ErrorBody).error.code]).toEqual([400, 'gw_invalid_request']);
    expect((junk.body as ErrorBody).error.message).toBe('email: must be an e-mail address');
    const cleared = await put({ app_id: org.app_id, external_user_id: user, email: '' });
    expect([cleared.status, cleared.body.email_hash]).toEqual([200, '']);
    const { rows } = await db.query<{ email_hash: string | null }>(
      'SELECT email_hash FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, user],
    );
    expect(rows).toEqual([{ email_hash: null }]);
  });

  it('applies the allowance_starts_at rules: omitted keeps, null restores, future or older → 400', async () => {
    const anchor = '2026-01-15T08:00:00.000Z';
    expect(
      (await put({ app_id: org.app_id, external_user_id: 'anchored', allowance_starts_at: anchor }))
        .body.allowance_starts_at,
    ).toBe(anchor);
    expect(
      (await put({ app_id: org.app_id, external_user_id: 'anchored', display_name: 'x' })).body
        .allowance_starts_at,
    ).toBe(anchor);
    const older = await put({
      app_id: org.app_id,
      external_user_id: 'anchored',
      allowance_starts_at: '2025-12-01T00:00:00Z',
    });
    expect(older.status).toBe(400);
    expect((older.body as ErrorBody).error.code).toBe('gw_invalid_request');
    const future = await put({
      app_id: org.app_id,
      external_user_id: 'anchored',
      allowance_starts_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(future.status).toBe(400);
    expect(
      (await put({ app_id: org.app_id, external_user_id: 'anchored' })).body.allowance_starts_at,
    ).toBe(anchor);
    expect(
      (await put({ app_id: org.app_id, external_user_id: 'anchored', allowance_starts_at: null }))
        .body.allowance_starts_at,
    ).toBeNull();
  });

  it('refuses a timestamp outside years 0001–9999 UTC, which it could not answer as RFC 3339, storing nothing', async () => {
    // Both are RFC 3339 as written, but their instants fall in year -1 and year 10000: they
    // were stored and answered as "-000001-12-31T00:01:00.000Z" and "+010000-01-01T23:58:59.000Z".
    const user = 'far-years';
    const early = await put({
      app_id: org.app_id,
      external_user_id: user,
      allowance_starts_at: '0000-01-01T00:00:00+23:59',
    });
    expect([early.status, (early.body as ErrorBody).error]).toEqual([
      400,
      {
        code: 'gw_invalid_request',
        message:
          'allowance_starts_at: must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z',
      },
    ]);
    const { rows } = await db.query(
      'SELECT 1 FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, user],
    );
    expect(rows).toEqual([]);
    expect((await put({ app_id: org.app_id, external_user_id: user })).status).toBe(201);
    const late = await postJson<ErrorBody>(
      `${gateway.url}/product-users/by-external-id/credit-grants`,
      {
        app_id: org.app_id,
        external_user_id: user,
        amount: '1.00',
        expires_at: '9999-12-31T23:59:59-23:59',
      },
      bearer(org.service_key),
    );
    expect([late.status, late.body.error.message]).toEqual([
      400,
      'expires_at: must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z',
    ]);
    const grants = await db.query(
      `SELECT 1 FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id
        WHERE u.app_id = $1 AND u.external_user_id = $2`,
      [org.app_id, user],
    );
    expect(grants.rows).toEqual([]);
  });

  it('keeps refusing an anchor older than the latest one set after null restored calendar periods', async () => {
    const user = 'anchor-floor';
    const anchor = new Date(Date.now() - 10 * 86_400_000).toISOString();
    const older = new Date(Date.now() - 40 * 86_400_000).toISOString();
    expect(
      (await put({ app_id: org.app_id, external_user_id: user, allowance_starts_at: anchor }))
        .status,
    ).toBe(201);
    const calendar = await put({
      app_id: org.app_id,
      external_user_id: user,
      allowance_starts_at: null,
    });
    expect([calendar.status, calendar.body.allowance_starts_at]).toEqual([200, null]);
    const bypass = await put({
      app_id: org.app_id,
      external_user_id: user,
      allowance_starts_at: older,
    });
    expect([bypass.status, (bypass.body as ErrorBody).error.code]).toEqual([
      400,
      'gw_invalid_request',
    ]);
    expect((bypass.body as ErrorBody).error.message).toContain('older than the stored anchor');
    const { rows } = await db.query<{ allowance_starts_at: Date | null }>(
      'SELECT allowance_starts_at FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, user],
    );
    expect(rows).toEqual([{ allowance_starts_at: null }]);
    // The latest anchor itself, or a newer one, is still accepted.
    const again = await put({
      app_id: org.app_id,
      external_user_id: user,
      allowance_starts_at: anchor,
    });
    expect([again.status, again.body.allowance_starts_at]).toEqual([200, anchor]);
  });

  it('applies the anchor rule to two PUTs that create the same user at once', async () => {
    const newer = new Date(Date.now() - 5 * 86_400_000).toISOString();
    const older = new Date(Date.now() - 15 * 86_400_000).toISOString();
    for (let round = 0; round < 8; round += 1) {
      const user = `anchor-race-${round}`;
      const answers = await Promise.all(
        [newer, older].map((anchor) =>
          put({ app_id: org.app_id, external_user_id: user, allowance_starts_at: anchor }),
        ),
      );
      // Whichever came first, the newer anchor stands: the older one is applied before it
      // or refused after it, never written over it.
      expect(answers.map((answer) => answer.status).sort()).toEqual(
        answers.some((answer) => answer.status === 400) ? [201, 400] : [200, 201],
      );
      const { rows } = await db.query<{ allowance_starts_at: Date; allowance_anchor_floor: Date }>(
        `SELECT allowance_starts_at, allowance_anchor_floor FROM product_users
          WHERE app_id = $1 AND external_user_id = $2`,
        [org.app_id, user],
      );
      expect(rows.map((row) => row.allowance_starts_at.toISOString())).toEqual([newer]);
      expect(rows[0]!.allowance_anchor_floor.toISOString()).toBe(newer);
    }
  });

  it('answers gw_invalid_app_id / gw_invalid_external_user_id for a body field that is missing, empty or not a string', async () => {
    // A missing id and an empty or blank one read alike: "<field>: is required".
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ external_user_id: 'x' }, 'gw_invalid_app_id', 'app_id: is required'],
      [{ app_id: '', external_user_id: 'x' }, 'gw_invalid_app_id', 'app_id: is required'],
      [{ app_id: ' ', external_user_id: 'x' }, 'gw_invalid_app_id', 'app_id: is required'],
      [{ app_id: 42, external_user_id: 'x' }, 'gw_invalid_app_id', 'app_id: must be a string'],
      [{ app_id: null, external_user_id: 'x' }, 'gw_invalid_app_id', 'app_id: must be a string'],
      [{ app_id: org.app_id }, 'gw_invalid_external_user_id', 'external_user_id: is required'],
      [
        { app_id: org.app_id, external_user_id: '' },
        'gw_invalid_external_user_id',
        'external_user_id: is required',
      ],
      [
        { app_id: org.app_id, external_user_id: 7 },
        'gw_invalid_external_user_id',
        'external_user_id: must be a string',
      ],
    ];
    for (const [body, code, message] of cases) {
      const expected = [JSON.stringify(body), 400, { error: { code, message } }];
      const upsert = await put(body);
      expect([JSON.stringify(body), upsert.status, upsert.body]).toEqual(expected);
      const grant = await postJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id/credit-grants`,
        { ...body, amount: '1.00' },
        bearer(org.service_key),
      );
      expect([JSON.stringify(body), grant.status, grant.body]).toEqual(expected);
    }
  });

  it('400 for a missing app_id or an app of another organization', async () => {
    const other = await seed(env);
    const missing = await put({ app_id: '', external_user_id: 'x' });
    expect((missing.body as ErrorBody).error.code).toBe('gw_invalid_app_id');
    const foreign = await put({ app_id: other.app_id, external_user_id: 'x' });
    expect([foreign.status, (foreign.body as ErrorBody).error.code]).toEqual([
      400,
      'gw_invalid_app_id',
    ]);
  });
});

describe('credit grants and the credit summary', () => {
  it('grants once per Idempotency-Key and reports the summary (USD default, 3-letter currency)', async () => {
    await put({ app_id: org.app_id, external_user_id: 'granted' });
    // A retry sends the same body; another body under the same key is a 409 (see below).
    const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const grant = (amount: string, key: string) =>
      fetch(`${gateway.url}/product-users/by-external-id/credit-grants`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          ...bearer(org.service_key),
        },
        body: JSON.stringify({
          app_id: org.app_id,
          external_user_id: 'granted',
          amount,
          expires_at: expiresAt,
          reason: 'welcome',
        }),
      });
    const first = await grant('0.50', 'welcome-1');
    expect(first.status).toBe(201);
    const firstBody = (await first.json()) as GrantBody;
    expect(firstBody).toMatchObject({
      amount: '0.500000000000',
      currency: 'USD',
      reason: 'welcome',
      status: 'active',
    });
    const replay = await grant('0.50', 'welcome-1');
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as GrantBody).grant_id).toBe(firstBody.grant_id);

    const summary = await getJson<Record<string, unknown>>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=granted`,
      bearer(org.service_key),
    );
    expect(summary.status).toBe(200);
    expect(summary.body).toMatchObject({
      currency: 'USD',
      available_credits: '0.500000000000',
      active_grant_count: 1,
      expiring_soon_amount: '0.500000000000',
      spent_this_month: '0.000000000000',
      spent_total: '0.000000000000',
    });
    const euro = await getJson<Record<string, unknown>>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=granted&currency=EUR`,
      bearer(org.service_key),
    );
    expect(euro.body).toMatchObject({
      currency: 'EUR',
      available_credits: '0.000000000000',
      active_grant_count: 0,
    });
    const bad = await getJson<ErrorBody>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=granted&currency=dollars`,
      bearer(org.service_key),
    );
    expect([bad.status, bad.body.error.code]).toEqual([400, 'gw_invalid_request']);
  });

  it('400 gw_amount_out_of_range for a 1e18 grant or one that takes the credits past the limit; nothing changes', async () => {
    await put({ app_id: org.app_id, external_user_id: 'limits' });
    const grant = (amount: string) =>
      postJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id/credit-grants`,
        { app_id: org.app_id, external_user_id: 'limits', amount },
        bearer(org.service_key),
      );
    const huge = await grant('1000000000000000000');
    expect([huge.status, huge.body.error.code]).toEqual([400, 'gw_amount_out_of_range']);
    expect(huge.body.error.message).toBe('amount: must be at most 1000000');
    expect((await grant('600000')).status).toBe(201);
    const past = await grant('400000.000000001');
    expect([past.status, past.body.error.code]).toEqual([400, 'gw_amount_out_of_range']);
    const summary = await getJson<Record<string, unknown>>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=limits`,
      bearer(org.service_key),
    );
    expect(summary.body).toMatchObject({
      available_credits: '600000.000000000000',
      active_grant_count: 1,
    });
  });

  it('spends credits only on costs in their currency: a EUR grant neither raises the USD allowance nor pays a USD request', async () => {
    const user = 'euro-holder';
    await setProductUserCap(env, org.app_id, user, '0.000001');
    const granted = await postJson<GrantBody>(
      `${gateway.url}/product-users/by-external-id/credit-grants`,
      { app_id: org.app_id, external_user_id: user, amount: '5.00', currency: 'EUR' },
      bearer(org.service_key),
    );
    expect(granted.status).toBe(201);
    expect(granted.body.credits).toMatchObject({
      currency: 'EUR',
      available_credits: '5.000000000000',
    });

    const profile = await getJson<ProfileBody>(
      profileUrl(org.app_id, user),
      bearer(org.service_key),
    );
    expect(profile.body.allowance).toMatchObject({
      currency: 'USD',
      available_credits: '0.000000000000',
      available_allowance: '0.000001000000',
    });
    expect(profile.body.credits).toMatchObject({
      currency: 'USD',
      available_credits: '0.000000000000',
    });

    const chat = await postJson<{
      error: { provider_specific_fields?: { error: { code: string } } };
    }>(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello mock:output_tokens=8' }],
        max_tokens: 16,
        user,
      },
      bearer(org.api_key),
    );
    expect([chat.status, chat.body.error.provider_specific_fields?.error.code]).toEqual([
      403,
      'gw_product_user_allowance_insufficient',
    ]);
    const euro = await getJson<Record<string, unknown>>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=${user}&currency=EUR`,
      bearer(org.service_key),
    );
    expect(euro.body).toMatchObject({
      currency: 'EUR',
      available_credits: '5.000000000000',
      active_grant_count: 1,
      spent_total: '0.000000000000',
    });
  });

  it('refuses a bad amount and changes nothing', async () => {
    await put({ app_id: org.app_id, external_user_id: 'badly-granted' });
    for (const amount of ['-1', ' 1.00', '1.00 ', '1.', '.5']) {
      const response = await postJson<ErrorBody>(
        `${gateway.url}/product-users/by-external-id/credit-grants`,
        { app_id: org.app_id, external_user_id: 'badly-granted', amount },
        bearer(org.service_key),
      );
      expect([amount, response.status, response.body.error.code]).toEqual([
        amount,
        400,
        'gw_invalid_request',
      ]);
      expect(response.body.error.message).toMatch(/^amount: /);
    }
    const summary = await getJson<Record<string, unknown>>(
      `${gateway.url}/product-users/by-external-id/credit-summary?app_id=${org.app_id}&external_user_id=badly-granted`,
      bearer(org.service_key),
    );
    expect(summary.body).toMatchObject({
      available_credits: '0.000000000000',
      active_grant_count: 0,
    });
  });
});

describe('an app that was deleted (soft: decision 127)', () => {
  it('keeps its product users readable and updatable, refuses new users and new grants with 409 gw_conflict, changing nothing', async () => {
    const gone = await seed(env);
    const ownerEmail = uniqueEmail('pu-deleted-app');
    await createMember(env, ownerEmail, gone.org_id, 'owner');
    const owner = await signInTo(gateway, ownerEmail);
    const grant = (key: string, amount = '1.00') =>
      postJson<GrantBody & ErrorBody>(
        `${gateway.url}/product-users/by-external-id/credit-grants`,
        { app_id: gone.app_id, external_user_id: 'kept', amount },
        { 'idempotency-key': key, ...bearer(gone.service_key) },
      );
    expect(
      (await put({ app_id: gone.app_id, external_user_id: 'kept' }, gone.service_key)).status,
    ).toBe(201);
    const before = await grant('before-delete');
    expect(before.status).toBe(201);
    expect((await owner.request('DELETE', `/dashboard/api/apps/${gone.app_id}`)).status).toBe(200);

    // Reading, and updating the users it has, still work.
    expect((await getJson(profileUrl(gone.app_id, 'kept'), bearer(gone.service_key))).status).toBe(
      200,
    );
    const updated = await put(
      { app_id: gone.app_id, external_user_id: 'kept', display_name: 'Kept' },
      gone.service_key,
    );
    expect(updated).toMatchObject({ status: 200, body: { display_name: 'Kept' } });
    // A replayed grant is the grant made before the deletion, not a new one.
    const replayed = await grant('before-delete');
    expect(replayed.status).toBe(200);
    expect(replayed.body.grant_id).toBe(before.body.grant_id);

    const newUser = await put({ app_id: gone.app_id, external_user_id: 'late' }, gone.service_key);
    expect(newUser.status).toBe(409);
    expect(newUser.body).toEqual({
      error: {
        code: 'gw_conflict',
        message: 'the app is deleted: it cannot get new product users',
      },
    });
    const newGrant = await grant('after-delete');
    expect(newGrant.status).toBe(409);
    expect(newGrant.body).toEqual({
      error: {
        code: 'gw_conflict',
        message: 'the app is deleted: it cannot get new credit grants',
      },
    });
    // The dashboard's grant goes through the same service.
    const kept = await db.query<{ id: string }>(
      `SELECT id FROM product_users WHERE app_id = $1 AND external_user_id = 'kept'`,
      [gone.app_id],
    );
    const fromDashboard = await owner.post<ErrorBody>(
      `/dashboard/api/product-users/${kept.rows[0]!.id}/credit-grants`,
      { amount: '1.00' },
    );
    expect(fromDashboard.status).toBe(409);
    expect(fromDashboard.body.error.code).toBe('gw_conflict');

    const users = await db.query(`SELECT external_user_id FROM product_users WHERE app_id = $1`, [
      gone.app_id,
    ]);
    expect(users.rows).toEqual([{ external_user_id: 'kept' }]);
    const grants = await db.query(
      `SELECT g.id FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id
        WHERE u.app_id = $1`,
      [gone.app_id],
    );
    expect(grants.rows).toEqual([{ id: before.body.grant_id }]);
  });
});
