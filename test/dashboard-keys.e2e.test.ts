// API keys and service keys through the dashboard API, driven as a browser would (cookie, CSRF
// token, Origin), against the real Redis and Postgres and two gateway instances: a key shown
// once and working at once, hints in lists, rotation with and without a grace period, and
// revocation reaching every instance (by pub/sub, not the cache's expiry).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, DashboardClient, signInTo, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { firstChangedAnswer } from './support/services.js';

const { env, db } = isolatedContext('dashboard-keys');
let first: GatewayProcess;
let second: GatewayProcess;
let tenant: SeededOrg;
interface ApiKey {
  id: string;
  key?: string;
  key_hint: string;
  name: string | null;
  status: string;
  model_policy: string[];
  app_connection_id: string;
  expires_at: string | null;
  replaced_by: string | null;
}
interface ServiceKey {
  id: string;
  key?: string;
  key_hint: string;
  scopes: string[];
  status: string;
  expires_at: string | null;
}
interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

const emails = { admin: uniqueEmail('admin'), viewer: uniqueEmail('viewer') };
const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Whether an inference call was served. */
const served = ([status]: [number, string | undefined]): boolean => status === 200;

const signedIn = (email: string): Promise<DashboardClient> => signInTo(first, email);

/** The status and error code (if any) of an inference call with `key` on `gateway`. */
async function infer(gateway: GatewayProcess, key: string): Promise<[number, string | undefined]> {
  const answer = await postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, bearer(key));
  return [answer.status, answer.body.error?.code];
}

/** The status of a product-user read with service key `key` on `gateway`. */
async function readProfile(
  gateway: GatewayProcess,
  key: string,
): Promise<[number, string | undefined]> {
  const response = await fetch(
    `${gateway.url}/product-users/by-external-id?app_id=${tenant.app_id}&external_user_id=nobody`,
    { headers: bearer(key) },
  );
  const body = (await response.json()) as Partial<ErrorBody>;
  return [response.status, body.error?.code];
}

beforeAll(async () => {
  [first, second] = await Promise.all([startGateway(env), startGateway(env)]);
  tenant = await seed(env);
  for (const [role, email] of Object.entries(emails)) {
    await createMember(env, email, tenant.org_id, role);
  }
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

const apiKeysOf = (connectionId: string) => `/dashboard/api/connections/${connectionId}/api-keys`;

describe('API keys', () => {
  it('are shown once at creation and work for inference at once; lists show hints, never keys; audited without the key', async () => {
    const admin = await signedIn(emails.admin);
    const created = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {
      name: 'Production',
      model_policy: ['vendor_b/*'],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Production',
      status: 'active',
      model_policy: ['vendor_b/*'],
      app_connection_id: tenant.app_connection_id,
      expires_at: null,
    });
    const raw = created.body.key!;
    expect(raw).toMatch(/^gw_[0-9A-Za-z]{32,64}$/);
    expect(raw.startsWith(created.body.key_hint.replace('…', ''))).toBe(true);
    for (const gateway of [first, second])
      expect(await infer(gateway, raw)).toEqual([200, undefined]);

    const viewer = await signedIn(emails.viewer);
    const list = await viewer.get<Page<ApiKey>>(apiKeysOf(tenant.app_connection_id));
    expect(list.status).toBe(200);
    const listed = list.body.data.find((key) => key.id === created.body.id);
    expect(listed).toMatchObject({ name: 'Production', key_hint: created.body.key_hint });
    expect(JSON.stringify(list.body)).not.toContain(raw);
    expect(list.body.data.every((key) => key.key === undefined)).toBe(true);

    const audit = await db.query<{ action: string; details: unknown }>(
      'SELECT action, details FROM dashboard_audit_log WHERE object_id = $1',
      [created.body.id],
    );
    expect(audit.rows).toEqual([
      {
        action: 'api_key.create',
        details: {
          app_connection_id: tenant.app_connection_id,
          name: 'Production',
          model_policy: ['vendor_b/*'],
        },
      },
    ]);
    expect(JSON.stringify(audit.rows)).not.toContain(raw);
  });

  it('are refused (400, nothing issued) for a policy pattern no model can match; a model the catalogue lacks yet is a warning', async () => {
    const admin = await signedIn(emails.admin);
    const count = async () =>
      (
        await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM api_keys WHERE app_connection_id = $1',
          [tenant.app_connection_id],
        )
      ).rows[0]!.n;
    const before = await count();
    for (const [policy, message] of [
      [['vendor_c/*'], 'model_policy.0: "vendor_c/*" names no registered provider'],
      [['vendor_b/*', 'gpt-4o'], 'model_policy.1: "gpt-4o" names no provider'],
      [['vendor_a/claude-*'], 'model_policy.0: "vendor_a/claude-*" is not a pattern'],
    ] as const) {
      const refused = await admin.post<ErrorBody>(apiKeysOf(tenant.app_connection_id), {
        model_policy: policy,
      });
      expect(refused.status, message).toBe(400);
      expect(refused.body.error.code).toBe('gw_invalid_request');
      expect(refused.body.error.message.startsWith(message), refused.body.error.message).toBe(true);
    }
    expect(await count()).toBe(before);
    const ahead = await admin.post<ApiKey & { warnings: string[] }>(
      apiKeysOf(tenant.app_connection_id),
      { model_policy: ['vendor_b/gpt-5'] },
    );
    expect(ahead.status).toBe(201);
    expect(ahead.body.model_policy).toEqual(['vendor_b/gpt-5']);
    expect(ahead.body.warnings).toEqual([
      'vendor_b/gpt-5 is not in the model catalogue (yet): the key serves it once it is added',
    ]);
  });

  it('are created without a body, and listed in pages', async () => {
    const admin = await signedIn(emails.admin);
    const connection = await admin.post<{ id: string }>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
      { name: 'Paged' },
    );
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      // no body at all: every field is optional
      const created = await admin.post<ApiKey>(apiKeysOf(connection.body.id));
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    const page1 = await admin.get<Page<ApiKey>>(`${apiKeysOf(connection.body.id)}?limit=2`);
    expect(page1.body.data.map((key) => key.id)).toEqual(ids.slice(0, 2));
    const page2 = await admin.get<Page<ApiKey>>(
      `${apiKeysOf(connection.body.id)}?limit=2&cursor=${page1.body.next_cursor}`,
    );
    expect(page2.body).toEqual({
      data: [expect.objectContaining({ id: ids[2] })],
      next_cursor: null,
    });
  });

  it('rotate: a new key for the same policy works at once, the old one answers gw_key_inactive at once on every instance', async () => {
    const admin = await signedIn(emails.admin);
    const old = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {
      name: 'Rotating',
      model_policy: ['vendor_b/*'],
    });
    for (const gateway of [first, second])
      expect(await infer(gateway, old.body.key!)).toEqual([200, undefined]);

    const rotated = await admin.post<ApiKey>(`/dashboard/api/api-keys/${old.body.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect(rotated.body).toMatchObject({
      name: 'Rotating',
      model_policy: ['vendor_b/*'],
      app_connection_id: tenant.app_connection_id,
      status: 'active',
    });
    expect(rotated.body.id).not.toBe(old.body.id);
    expect(rotated.body.key).not.toBe(old.body.key);
    expect(await infer(first, rotated.body.key!)).toEqual([200, undefined]);
    // every instance refuses it once the invalidation arrives (the cache alone would keep it
    // for AUTH_CACHE_TTL_MS, 30 s)
    for (const gateway of [first, second]) {
      expect(await firstChangedAnswer(() => infer(gateway, old.body.key!), served)).toEqual([
        401,
        'gw_key_inactive',
      ]);
    }
    const list = await admin.get<Page<ApiKey>>(apiKeysOf(tenant.app_connection_id));
    expect(list.body.data.find((key) => key.id === old.body.id)).toMatchObject({
      status: 'revoked',
      replaced_by: rotated.body.id,
    });
    // a rotated key cannot be rotated again: its successor is the one to rotate
    const again = await admin.post<ErrorBody>(`/dashboard/api/api-keys/${old.body.id}/rotate`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('gw_conflict');
  });

  it('a rotated key is refused saying it was replaced by a rotation, naming neither key; a revoked one says revoked', async () => {
    const admin = await signedIn(emails.admin);
    const old = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    const revoked = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    expect(await infer(first, old.body.key!)).toEqual([200, undefined]);
    const rotated = await admin.post<ApiKey>(`/dashboard/api/api-keys/${old.body.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect((await admin.post(`/dashboard/api/api-keys/${revoked.body.id}/revoke`)).status).toBe(
      200,
    );
    const refusal = async (key: string) => {
      const answer = await postJson<ErrorBody>(
        `${first.url}/v1/chat/completions`,
        chat,
        bearer(key),
      );
      return [answer.status, answer.body.error];
    };
    await firstChangedAnswer(() => infer(first, old.body.key!), served);
    expect(await refusal(old.body.key!)).toEqual([
      401,
      expect.objectContaining({
        code: 'gw_key_inactive',
        message: 'this API key was replaced by a rotation: use the new key issued in its place',
      }),
    ]);
    const [, error] = await refusal(old.body.key!);
    for (const secret of [old.body.key!, rotated.body.key!, rotated.body.id, rotated.body.key_hint])
      expect(JSON.stringify(error)).not.toContain(secret);
    expect(await refusal(revoked.body.key!)).toEqual([
      401,
      expect.objectContaining({
        code: 'gw_key_inactive',
        message: 'this API key is revoked or inactive',
      }),
    ]);
    // a rotated key whose connection is then revoked: its successor does not work either
    const connection = await admin.post<{ id: string }>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
      { name: 'closing after a rotation' },
    );
    expect(connection.status).toBe(201);
    const closing = await admin.post<ApiKey>(apiKeysOf(connection.body.id), {});
    expect((await admin.post(`/dashboard/api/api-keys/${closing.body.id}/rotate`)).status).toBe(
      201,
    );
    expect(
      (await admin.request('DELETE', `/dashboard/api/connections/${connection.body.id}`)).status,
    ).toBe(200);
    expect(await refusal(closing.body.key!)).toEqual([
      401,
      expect.objectContaining({
        code: 'gw_key_inactive',
        message: 'this API key is revoked or inactive',
      }),
    ]);
  });

  it('rotate with a grace period: the old key keeps working on every instance until it ends, then stops although cached', async () => {
    const admin = await signedIn(emails.admin);
    const old = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    const rotated = await admin.post<ApiKey>(`/dashboard/api/api-keys/${old.body.id}/rotate`, {
      // long enough for the calls below on a loaded machine, checked by the line after them
      grace_seconds: 5,
    });
    expect(rotated.status).toBe(201);
    const list = await admin.get<Page<ApiKey>>(apiKeysOf(tenant.app_connection_id));
    const previous = list.body.data.find((key) => key.id === old.body.id)!;
    expect(previous).toMatchObject({ status: 'active', replaced_by: rotated.body.id });
    const endsAt = Date.parse(previous.expires_at!);
    // both instances use (and so cache) the old key during the grace period
    for (const gateway of [first, second]) {
      expect(await infer(gateway, old.body.key!)).toEqual([200, undefined]);
      expect(await infer(gateway, rotated.body.key!)).toEqual([200, undefined]);
    }
    expect(Date.now()).toBeLessThan(endsAt);
    await sleep(endsAt - Date.now() + 100);
    for (const gateway of [first, second]) {
      expect(await infer(gateway, old.body.key!)).toEqual([401, 'gw_key_inactive']);
      expect(await infer(gateway, rotated.body.key!)).toEqual([200, undefined]);
    }
    const refused = await postJson<ErrorBody>(
      `${first.url}/v1/chat/completions`,
      chat,
      bearer(old.body.key!),
    );
    expect(refused.body.error.message).toBe(
      'this API key was rotated and its grace period has ended: use the new key issued in its place',
    );
    const after = await admin.get<Page<ApiKey>>(apiKeysOf(tenant.app_connection_id));
    expect(after.body.data.find((key) => key.id === old.body.id)?.status).toBe('expired');
  });

  it('refuse a grace period over 24 h, and change nothing', async () => {
    const admin = await signedIn(emails.admin);
    const key = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    const refused = await admin.post<ErrorBody>(`/dashboard/api/api-keys/${key.body.id}/rotate`, {
      grace_seconds: 86_401,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^grace_seconds: /);
    const { rows } = await db.query('SELECT status, replaced_by FROM api_keys WHERE id = $1', [
      key.body.id,
    ]);
    expect(rows).toEqual([{ status: 'active', replaced_by: null }]);
  });

  it('revoke: every instance refuses the key once the invalidation arrives; audited', async () => {
    const admin = await signedIn(emails.admin);
    const key = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    for (const gateway of [first, second])
      expect(await infer(gateway, key.body.key!)).toEqual([200, undefined]);
    const revoked = await admin.post<ApiKey>(`/dashboard/api/api-keys/${key.body.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: key.body.id, status: 'revoked' });
    expect(revoked.body.key).toBeUndefined();
    for (const gateway of [first, second]) {
      expect(await firstChangedAnswer(() => infer(gateway, key.body.key!), served)).toEqual([
        401,
        'gw_key_inactive',
      ]);
    }
    const audit = await db.query<{ action: string }>(
      'SELECT action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
      [key.body.id],
    );
    expect(audit.rows.map((row) => row.action)).toEqual(['api_key.create', 'api_key.revoke']);
  });

  it('viewers may list but not create, rotate or revoke (403 gw_role_forbidden); writes need the Origin', async () => {
    const admin = await signedIn(emails.admin);
    const key = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    const viewer = await signedIn(emails.viewer);
    for (const path of [
      apiKeysOf(tenant.app_connection_id),
      `/dashboard/api/api-keys/${key.body.id}/rotate`,
      `/dashboard/api/api-keys/${key.body.id}/revoke`,
    ]) {
      const refused = await viewer.post<ErrorBody>(path, {});
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');
    }
    const noOrigin = await admin.post<ErrorBody>(
      `/dashboard/api/api-keys/${key.body.id}/revoke`,
      undefined,
      { origin: null },
    );
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error.code).toBe('gw_origin_not_allowed');
    expect(await infer(first, key.body.key!)).toEqual([200, undefined]);
  });

  it("another organization's keys are not found, named for what the path asks, and keep working", async () => {
    const other = await seed(env);
    const ids = await db.query<{ api_key: string; service_key: string }>(
      `SELECT (SELECT id FROM api_keys WHERE org_id = $1) AS api_key,
              (SELECT id FROM service_keys WHERE org_id = $1) AS service_key`,
      [other.org_id],
    );
    const { api_key: apiKeyId, service_key: serviceKeyId } = ids.rows[0]!;
    const admin = await signedIn(emails.admin);
    for (const [path, noun] of [
      [`/dashboard/api/api-keys/${apiKeyId}/rotate`, 'API key'],
      [`/dashboard/api/api-keys/${apiKeyId}/revoke`, 'API key'],
      [`/dashboard/api/service-keys/${serviceKeyId}/revoke`, 'service key'],
      [`/dashboard/api/service-keys/${serviceKeyId}/disable`, 'service key'],
      [`/dashboard/api/orgs/${other.org_id}/service-keys`, 'organization'],
      [apiKeysOf(other.app_connection_id), 'connection'],
    ] as const) {
      const refused = await admin.post<ErrorBody>(path, {});
      expect(refused.status, path).toBe(404);
      expect(refused.body.error).toEqual({
        code: 'gw_not_found',
        message: `no ${noun} with this id in your organizations`,
      });
    }
    expect(await infer(first, other.api_key)).toEqual([200, undefined]);
    expect((await readProfile(first, other.service_key))[0]).not.toBe(403);
  });

  it('the CLI rotates through the same service', async () => {
    const admin = await signedIn(emails.admin);
    const key = await admin.post<ApiKey>(apiKeysOf(tenant.app_connection_id), {});
    const rotated = await runCliJson<{ id: string; key: string; replaces: string }>(
      ['api-key', 'rotate', '--id', key.body.id],
      env,
    );
    expect(rotated.replaces).toBe(key.body.id);
    expect(await infer(first, rotated.key)).toEqual([200, undefined]);
    expect(await infer(first, key.body.key!)).toEqual([401, 'gw_key_inactive']);
    const audit = await db.query(
      'SELECT user_id, action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
      [key.body.id],
    );
    expect(audit.rows.at(-1)).toEqual({ user_id: 'cli', action: 'api_key.rotate' });
  });
});

const serviceKeysOf = (orgId: string) => `/dashboard/api/orgs/${orgId}/service-keys`;

describe('service keys', () => {
  it('are shown once with their scopes and work at once; lists show hints', async () => {
    const admin = await signedIn(emails.admin);
    const created = await admin.post<ServiceKey>(serviceKeysOf(tenant.org_id), {
      scopes: ['product_users:read'],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ scopes: ['product_users:read'], status: 'active' });
    const raw = created.body.key!;
    expect(raw).toMatch(/^gw_svc_[0-9A-Za-z]{32,64}$/);
    const [status] = await readProfile(second, raw);
    expect(status).not.toBe(401);
    const write = await fetch(`${first.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(raw) },
      body: JSON.stringify({ app_id: tenant.app_id, external_user_id: 'someone' }),
    });
    expect(write.status).toBe(403);
    expect(((await write.json()) as ErrorBody).error.code).toBe('gw_service_key_scope_required');

    const viewer = await signedIn(emails.viewer);
    const list = await viewer.get<Page<ServiceKey>>(serviceKeysOf(tenant.org_id));
    expect(list.status).toBe(200);
    expect(list.body.data.find((key) => key.id === created.body.id)).toMatchObject({
      key_hint: created.body.key_hint,
      scopes: ['product_users:read'],
    });
    expect(JSON.stringify(list.body)).not.toContain(raw);
    const audit = await db.query('SELECT details FROM dashboard_audit_log WHERE object_id = $1', [
      created.body.id,
    ]);
    expect(JSON.stringify(audit.rows)).not.toContain(raw);
  });

  it('refuse unknown scopes and a past or unwritable expiry, creating nothing', async () => {
    const admin = await signedIn(emails.admin);
    const before = await db.query('SELECT count(*)::int AS n FROM service_keys WHERE org_id = $1', [
      tenant.org_id,
    ]);
    const scopes = await admin.post<ErrorBody>(serviceKeysOf(tenant.org_id), {
      scopes: ['wallets:write'],
    });
    expect(scopes.status).toBe(400);
    expect(scopes.body.error.message).toMatch(/^scopes\.0: /);
    const past = await admin.post<ErrorBody>(serviceKeysOf(tenant.org_id), {
      expires_at: '2001-01-01T00:00:00Z',
    });
    expect(past.status).toBe(400);
    expect(past.body.error.message).toMatch(/^expires_at: /);
    // In year 10000 once in UTC: answered as "+010000-…", which is not RFC 3339.
    const farFuture = await admin.post<ErrorBody>(serviceKeysOf(tenant.org_id), {
      expires_at: '9999-12-31T23:59:59-23:59',
    });
    expect([farFuture.status, farFuture.body.error.message]).toEqual([
      400,
      'expires_at: must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z',
    ]);
    const after = await db.query('SELECT count(*)::int AS n FROM service_keys WHERE org_id = $1', [
      tenant.org_id,
    ]);
    expect(after.rows).toEqual(before.rows);
  });

  for (const action of ['revoke', 'disable'] as const) {
    it(`${action}: every instance refuses the key once the invalidation arrives; viewers may not`, async () => {
      const admin = await signedIn(emails.admin);
      const created = await admin.post<ServiceKey>(serviceKeysOf(tenant.org_id), {});
      const raw = created.body.key!;
      const answered: [number, string | undefined][] = [];
      for (const gateway of [first, second]) answered.push(await readProfile(gateway, raw));
      for (const [status] of answered) expect(status).not.toBe(401);
      const viewer = await signedIn(emails.viewer);
      const refused = await viewer.post<ErrorBody>(
        `/dashboard/api/service-keys/${created.body.id}/${action}`,
      );
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');

      const changed = await admin.post<ServiceKey>(
        `/dashboard/api/service-keys/${created.body.id}/${action}`,
      );
      expect(changed.status).toBe(200);
      const status = action === 'revoke' ? 'revoked' : 'disabled';
      expect(changed.body).toMatchObject({ id: created.body.id, status });
      // each instance answers as before until the invalidation arrives
      for (const [index, gateway] of [first, second].entries()) {
        const before = answered[index]!;
        const after = await firstChangedAnswer(
          () => readProfile(gateway, raw),
          ([status, code]) => status === before[0] && code === before[1],
        );
        expect(after).toEqual([403, 'gw_service_key_inactive']);
      }
      const audit = await db.query<{ action: string }>(
        'SELECT action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
        [created.body.id],
      );
      expect(audit.rows.map((row) => row.action)).toEqual([
        'service_key.create',
        `service_key.${action}`,
      ]);
    });
  }
});
