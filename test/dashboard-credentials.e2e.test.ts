// Provider credentials (bring your own key) through the dashboard API, on two gateway
// instances over the real Redis and Postgres: added only after the vendor accepts the key,
// answered with its fingerprint and never its secret, used by inference at once, and
// disabled, re-prioritised, granted, ungranted and deleted with every instance following. A
// policy naming a model the catalogue lacks is stored, with `warnings` saying so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, getJson, postJson, type ErrorBody } from './support/http.js';
import { responseSchema, schemaProblems } from './support/openapi-check.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('dash-cred');
let gateways: [GatewayProcess, GatewayProcess];
let tenant: SeededOrg;

/** The warning of a credential granted to no app connection (decision 456). */
const NO_CONNECTION =
  'the credential is granted to no app connection, so it serves no request: until a connection is granted it, requests are served without it (by gw’s own keys, paid from the wallet, unless another credential serves them)';

interface Credential {
  id: string;
  org_id: string;
  provider: string;
  secret_kind: string;
  name: string;
  model_policy: string[];
  routing_mode: string;
  priority: number;
  status: string;
  fingerprint: string;
  app_connection_ids: string[];
  created_at: string;
}

const emails = {
  admin: uniqueEmail('cred-admin'),
  member: uniqueEmail('cred-member'),
  viewer: uniqueEmail('cred-viewer'),
};

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hi' }],
};

/** Sends one request and answers the credential that served it (null: the system route). */
async function servedBy(gateway: GatewayProcess, apiKey: string): Promise<string | null> {
  const answer = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(apiKey));
  expect(answer.status).toBe(200);
  const requestId = answer.headers.get('x-request-id')!;
  return eventually(async () => {
    const { rows } = await db.query<{ credential_id: string | null }>(
      'SELECT credential_id FROM usage_records WHERE request_id = $1',
      [requestId],
    );
    return rows[0] ? { id: rows[0].credential_id } : undefined;
  }).then((row) => row.id);
}

async function addCredential(
  client: DashboardClient,
  org: SeededOrg,
  secret: string,
  extra: Record<string, unknown> = {},
) {
  return client.post<Credential & { warnings: string[] } & ErrorBody>(
    `/dashboard/api/orgs/${org.org_id}/credentials`,
    {
      provider: 'vendor_b',
      name: 'primary',
      secret,
      app_connection_ids: [org.app_connection_id],
      ...extra,
    },
  );
}

/** A new organization, and a client signed in to the first gateway as its `role`. */
async function signedInToNewOrg(
  label: string,
  role: 'admin' | 'owner',
): Promise<{ org: SeededOrg; client: DashboardClient }> {
  const org = await seed(env);
  const email = uniqueEmail(label);
  await createMember(env, email, org.org_id, role);
  return { org, client: await signInTo(gateways[0], email) };
}

beforeAll(async () => {
  gateways = (await Promise.all([startGateway(env), startGateway(env)])) as [
    GatewayProcess,
    GatewayProcess,
  ];
  tenant = await seed(env);
  for (const [role, email] of Object.entries(emails)) {
    await createMember(env, email, tenant.org_id, role);
  }
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('adding a credential', () => {
  it('checks the key with the vendor, answers its fingerprint (never the secret), and inference uses it at once', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const secret = 'mock-ok-dashboard-secret-0001';
    const created = await addCredential(admin, tenant, secret);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^cred_/),
      org_id: tenant.org_id,
      provider: 'vendor_b',
      secret_kind: 'api_key',
      name: 'primary',
      model_policy: ['vendor_b/*'],
      routing_mode: 'byok_first',
      priority: 1,
      status: 'active',
      fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{16}$/),
      app_connection_ids: [tenant.app_connection_id],
      created_at: expect.any(String),
      warnings: [],
    });
    expect(JSON.stringify(created.body)).not.toContain(secret);
    expect(await servedBy(gateways[0], tenant.api_key)).toBe(created.body.id);

    const { rows } = await db.query<{ ciphertext: Buffer }>(
      'SELECT ciphertext FROM provider_credentials WHERE id = $1',
      [created.body.id],
    );
    expect(rows[0]!.ciphertext.toString('latin1')).not.toContain(secret);
    const audit = await db.query<{ action: string; details: Record<string, unknown> }>(
      'SELECT action, details FROM dashboard_audit_log WHERE object_id = $1',
      [created.body.id],
    );
    expect(audit.rows).toEqual([
      {
        action: 'credential.create',
        details: expect.objectContaining({ fingerprint: created.body.fingerprint }),
      },
    ]);
    expect(JSON.stringify(audit.rows)).not.toContain(secret);
    for (const gateway of gateways) expect(gateway.output()).not.toContain(secret);

    const viewer = await signInTo(gateways[0], emails.viewer);
    const list = await viewer.get<{ data: Credential[]; next_cursor: string | null }>(
      `/dashboard/api/orgs/${tenant.org_id}/credentials`,
    );
    expect(list.status).toBe(200);
    expect(list.body.data.map((credential) => credential.id)).toContain(created.body.id);
    expect(JSON.stringify(list.body)).not.toContain(secret);

    // Tidy up for the other tests: this org's requests go to the system route again.
    expect(
      (await admin.request('DELETE', `/dashboard/api/credentials/${created.body.id}`)).status,
    ).toBe(200);
  });

  it('stores nothing when the vendor refuses the key, or the input is not a key; the secret is in no answer', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const count = async () =>
      (
        await db.query('SELECT count(*)::int AS n FROM provider_credentials WHERE org_id = $1', [
          tenant.org_id,
        ])
      ).rows[0];
    const before = await count();
    const refused = await addCredential(admin, tenant, 'mock-bad-key-from-dashboard');
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('gw_provider_credential_rejected');
    expect(JSON.stringify(refused.body)).not.toContain('mock-bad-key-from-dashboard');
    for (const [extra, field] of [
      [{ secret: 'has a space' }, 'secret'],
      [{ secret: '' }, 'secret'],
      [{ provider: 'vendor_z' }, 'provider'],
      [{ priority: 0 }, 'priority'],
      [{ routing_mode: 'byok_sometimes' }, 'routing_mode'],
      [{ model_policy: ['not a pattern'] }, 'model_policy'],
      // Patterns that can never match one of a vendor_b credential's models (decision 338).
      [{ model_policy: ['vendor_c/*'] }, 'model_policy'],
      [{ model_policy: ['gpt-4o'] }, 'model_policy'],
      [{ model_policy: ['vendor_b/*', 'vendor_a/*'] }, 'model_policy'],
    ] as const) {
      const answer = await addCredential(admin, tenant, 'mock-ok-x', extra);
      expect(answer.status, field).toBe(400);
      expect(answer.body.error.message, field).toMatch(new RegExp(`^${field}`));
      expect(JSON.stringify(answer.body)).not.toContain('has a space');
    }
    const other = await seed(env);
    const foreignGrant = await addCredential(admin, tenant, 'mock-ok-y', {
      app_connection_ids: [other.app_connection_id],
    });
    expect(foreignGrant.status).toBe(404);
    expect(foreignGrant.body.error.code).toBe('gw_not_found');
    expect(await count()).toEqual(before);
  });
});

describe('a model policy naming a model the catalogue lacks', () => {
  it('is stored, and the create and the change that wrote it answer warnings naming the credential', async () => {
    const { org, client: admin } = await signedInToNewOrg('cred-warned', 'admin');
    const warned = (id: string) =>
      `${id} is not in the model catalogue (yet): the credential serves it once it is added`;
    const storedPolicy = async (id: string) =>
      (
        await db.query<{ model_policy: string[] }>(
          'SELECT model_policy FROM provider_credentials WHERE id = $1',
          [id],
        )
      ).rows[0]?.model_policy;

    const created = await addCredential(admin, org, 'mock-ok-warned-key', {
      model_policy: ['vendor_b/gpt-4o-mini', 'vendor_b/gpt-next-preview'],
      app_connection_ids: [],
    });
    expect(created.status).toBe(201);
    // granted to no connection: that warning first, then the policy's
    expect(created.body.warnings).toEqual([NO_CONNECTION, warned('vendor_b/gpt-next-preview')]);
    expect(created.body.model_policy).toEqual([
      'vendor_b/gpt-4o-mini',
      'vendor_b/gpt-next-preview',
    ]);
    expect(await storedPolicy(created.body.id)).toEqual([
      'vendor_b/gpt-4o-mini',
      'vendor_b/gpt-next-preview',
    ]);
    // the answer is as /openapi.json describes it
    const document = (await getJson(`${gateways[0].url}/openapi.json`)).body;
    const createSchema = responseSchema(
      document,
      '/dashboard/api/orgs/{org_id}/credentials',
      'post',
      201,
    );
    expect(schemaProblems(document, createSchema, created.body)).toEqual([]);
    // and the schema holds the field: an answer without it does not pass
    const { warnings: _warnings, ...withoutWarnings } = created.body;
    expect(schemaProblems(document, createSchema, withoutWarnings)).toEqual([
      '$.warnings: required, missing',
    ]);

    const path = `/dashboard/api/credentials/${created.body.id}`;
    const changed = await admin.request<Credential & { warnings: string[] }>('PATCH', path, {
      model_policy: ['vendor_b/*', 'vendor_b/o9', 'vendor_b/o9-mini'],
    });
    expect(changed.status).toBe(200);
    expect(changed.body.warnings).toEqual([
      NO_CONNECTION,
      warned('vendor_b/o9'),
      warned('vendor_b/o9-mini'),
    ]);
    expect(await storedPolicy(created.body.id)).toEqual([
      'vendor_b/*',
      'vendor_b/o9',
      'vendor_b/o9-mini',
    ]);
    const updateSchema = responseSchema(
      document,
      '/dashboard/api/credentials/{credential_id}',
      'patch',
      200,
    );
    expect(schemaProblems(document, updateSchema, changed.body)).toEqual([]);

    // a change that writes no policy answers no policy warning, whatever the stored one names
    for (const change of [{ priority: 2 }, { status: 'disabled' }, { name: 'renamed' }]) {
      const other = await admin.request<{ warnings: string[] }>('PATCH', path, change);
      expect(other.status, JSON.stringify(change)).toBe(200);
      expect(other.body.warnings, JSON.stringify(change)).toEqual([NO_CONNECTION]);
    }
    // models the catalogue lists, or wildcards: no policy warnings
    const known = await admin.request<{ warnings: string[] }>('PATCH', path, {
      model_policy: ['vendor_b/gpt-4o-mini'],
    });
    expect(known.body.warnings).toEqual([NO_CONNECTION]);
    expect(await storedPolicy(created.body.id)).toEqual(['vendor_b/gpt-4o-mini']);
  });
});

describe('a credential granted to no connection', () => {
  it('serves no request, and every write that leaves it so answers a warning saying it', async () => {
    const { org, client: admin } = await signedInToNewOrg('cred-ungranted', 'admin');
    const document = (await getJson(`${gateways[0].url}/openapi.json`)).body;

    const created = await addCredential(admin, org, 'mock-ok-ungranted-key', {
      app_connection_ids: [],
    });
    expect(created.status).toBe(201);
    expect(created.body.app_connection_ids).toEqual([]);
    expect(created.body.warnings).toEqual([NO_CONNECTION]);
    // what it warns of: the org's requests are still served by gw's own route (the wallet pays)
    expect(await servedBy(gateways[0], org.api_key)).toBeNull();
    // the list shows it with no connection (the dashboard marks such a row)
    const listed = await admin.get<{ data: Credential[] }>(
      `/dashboard/api/orgs/${org.org_id}/credentials`,
    );
    expect(listed.body.data.map((row) => [row.id, row.app_connection_ids])).toEqual([
      [created.body.id, []],
    ]);

    const grants = `/dashboard/api/credentials/${created.body.id}/grants/${org.app_connection_id}`;
    const granted = await admin.request<Credential & { warnings: string[] }>('PUT', grants);
    expect(granted.status).toBe(200);
    expect([granted.body.app_connection_ids, granted.body.warnings]).toEqual([
      [org.app_connection_id],
      [],
    ]);
    expect(
      schemaProblems(
        document,
        responseSchema(
          document,
          '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
          'put',
          200,
        ),
        granted.body,
      ),
    ).toEqual([]);
    expect(await servedBy(gateways[0], org.api_key)).toBe(created.body.id);
    // granted: a change answers no warning
    const renamed = await admin.request<{ warnings: string[] }>(
      'PATCH',
      `/dashboard/api/credentials/${created.body.id}`,
      { name: 'granted' },
    );
    expect([renamed.status, renamed.body.warnings]).toEqual([200, []]);

    // removing the last grant warns again; removing one that is not there does too (still none)
    for (const attempt of ['last grant', 'no grant left']) {
      const revoked = await admin.request<Credential & { warnings: string[] }>('DELETE', grants);
      expect(revoked.status, attempt).toBe(200);
      expect([revoked.body.app_connection_ids, revoked.body.warnings], attempt).toEqual([
        [],
        [NO_CONNECTION],
      ]);
      expect(
        schemaProblems(
          document,
          responseSchema(
            document,
            '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
            'delete',
            200,
          ),
          revoked.body,
        ),
        attempt,
      ).toEqual([]);
    }
    expect(await servedBy(gateways[0], org.api_key)).toBeNull();
    await admin.request('DELETE', `/dashboard/api/credentials/${created.body.id}`);
  });
});

describe('changing a credential', () => {
  it('disable, enable, priority and routing mode reach both instances at once; grants decide which connection may use it', async () => {
    const { org, client: owner } = await signedInToNewOrg('cred-changer', 'owner');
    const primary = (await addCredential(owner, org, 'mock-ok-primary-key')).body;
    const backup = (
      await addCredential(owner, org, 'mock-ok-backup-key', { name: 'backup', priority: 2 })
    ).body;
    // Both instances have used (and cached) the credentials before the changes.
    expect(await servedBy(gateways[0], org.api_key)).toBe(primary.id);
    expect(await servedBy(gateways[1], org.api_key)).toBe(primary.id);

    const disabled = await owner.request<Credential>(
      'PATCH',
      `/dashboard/api/credentials/${primary.id}`,
      { status: 'disabled' },
    );
    expect(disabled.status).toBe(200);
    expect(disabled.body.status).toBe('disabled');
    expect(await servedBy(gateways[0], org.api_key)).toBe(backup.id);
    // the other instance once the invalidation arrives (its cache alone keeps them 30 s)
    await eventually(async () =>
      (await servedBy(gateways[1], org.api_key)) === backup.id ? true : undefined,
    );

    const changed = await owner.request<Credential>(
      'PATCH',
      `/dashboard/api/credentials/${backup.id}`,
      {
        name: 'backup, renamed',
        priority: 5,
        routing_mode: 'byok_only',
        model_policy: ['vendor_b/gpt-4o-mini'],
      },
    );
    const mismatched = await owner.request<ErrorBody>(
      'PATCH',
      `/dashboard/api/credentials/${backup.id}`,
      { model_policy: ['vendor_a/*'] },
    );
    expect(mismatched.status).toBe(400);
    expect(mismatched.body.error).toEqual({
      code: 'gw_invalid_request',
      message:
        'model_policy: "vendor_a/*" names another provider than the credential\'s: patterns start with vendor_b/ (e.g. vendor_b/* or vendor_b/<model>)',
    });
    expect(changed.body).toMatchObject({
      name: 'backup, renamed',
      priority: 5,
      routing_mode: 'byok_only',
      model_policy: ['vendor_b/gpt-4o-mini'],
      status: 'active',
    });
    const enabled = await owner.request<Credential>(
      'PATCH',
      `/dashboard/api/credentials/${primary.id}`,
      {
        status: 'active',
      },
    );
    expect(enabled.body.status).toBe('active');
    expect(await servedBy(gateways[0], org.api_key)).toBe(primary.id);

    // Without a grant the connection cannot use it; with the grant back, it does.
    const ungranted = await owner.request<Credential>(
      'DELETE',
      `/dashboard/api/credentials/${primary.id}/grants/${org.app_connection_id}`,
    );
    expect(ungranted.body.app_connection_ids).toEqual([]);
    expect(await servedBy(gateways[0], org.api_key)).toBe(backup.id);
    const granted = await owner.request<Credential>(
      'PUT',
      `/dashboard/api/credentials/${primary.id}/grants/${org.app_connection_id}`,
    );
    expect(granted.body.app_connection_ids).toEqual([org.app_connection_id]);
    expect(await servedBy(gateways[0], org.api_key)).toBe(primary.id);
    // Another organization's connection, or none, is not found: to grant and to ungrant alike.
    for (const method of ['PUT', 'DELETE'] as const) {
      for (const connectionId of [tenant.app_connection_id, 'conn_nobody']) {
        const foreign = await owner.request<ErrorBody>(
          method,
          `/dashboard/api/credentials/${primary.id}/grants/${connectionId}`,
        );
        expect(foreign.status, `${method} ${connectionId}`).toBe(404);
        expect(foreign.body.error.code).toBe('gw_not_found');
      }
    }

    const empty = await owner.request<ErrorBody>(
      'PATCH',
      `/dashboard/api/credentials/${primary.id}`,
      {},
    );
    expect(empty.status).toBe(400);

    const { rows } = await db.query<{ action: string }>(
      'SELECT action FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
      [primary.id],
    );
    expect(rows.map((row) => row.action)).toEqual([
      'credential.create',
      'credential.disable',
      'credential.enable',
      'credential.revoke_grant',
      'credential.grant',
    ]);
  });

  it('deleting revokes its grants: no instance uses it, lists leave it out, and it answers 404 after', async () => {
    const { org, client: admin } = await signedInToNewOrg('cred-deleter', 'admin');
    const credential = (await addCredential(admin, org, 'mock-ok-doomed-key')).body;
    expect(await servedBy(gateways[1], org.api_key)).toBe(credential.id);
    const deleted = await admin.request<Credential>(
      'DELETE',
      `/dashboard/api/credentials/${credential.id}`,
    );
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ status: 'deleted', app_connection_ids: [] });
    expect(await servedBy(gateways[0], org.api_key)).toBeNull();
    await eventually(async () =>
      (await servedBy(gateways[1], org.api_key)) === null ? true : undefined,
    );
    const grants = await db.query(
      'SELECT 1 FROM provider_credential_grants WHERE credential_id = $1',
      [credential.id],
    );
    expect(grants.rowCount).toBe(0);
    const list = await admin.get<{ data: Credential[] }>(
      `/dashboard/api/orgs/${org.org_id}/credentials`,
    );
    expect(list.body.data).toEqual([]);
    for (const [method, body] of [
      ['PATCH', { status: 'active' }],
      ['DELETE', undefined],
    ] as const) {
      const gone = await admin.request<ErrorBody>(
        method,
        `/dashboard/api/credentials/${credential.id}`,
        body,
      );
      expect(gone.status, method).toBe(404);
      expect(gone.body.error.code).toBe('gw_not_found');
    }
  });
});

describe('who may manage credentials', () => {
  it('a member and a viewer cannot add, change or delete one (403 gw_role_forbidden); a viewer lists them', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const credential = (await addCredential(admin, tenant, 'mock-ok-guarded-key')).body;
    for (const role of ['member', 'viewer'] as const) {
      const client = await signInTo(gateways[0], emails[role]);
      const attempts = [
        [
          'POST',
          `/dashboard/api/orgs/${tenant.org_id}/credentials`,
          { provider: 'vendor_b', name: 'x', secret: 'mock-ok-z' },
        ],
        ['PATCH', `/dashboard/api/credentials/${credential.id}`, { status: 'disabled' }],
        ['DELETE', `/dashboard/api/credentials/${credential.id}`, undefined],
        [
          'PUT',
          `/dashboard/api/credentials/${credential.id}/grants/${tenant.app_connection_id}`,
          undefined,
        ],
        [
          'DELETE',
          `/dashboard/api/credentials/${credential.id}/grants/${tenant.app_connection_id}`,
          undefined,
        ],
      ] as const;
      for (const [method, path, body] of attempts) {
        const refused = await client.request<ErrorBody>(method, path, body);
        expect(refused.status, `${role} ${method} ${path}`).toBe(403);
        expect(refused.body.error.code).toBe('gw_role_forbidden');
      }
    }
    const { rows } = await db.query('SELECT status FROM provider_credentials WHERE id = $1', [
      credential.id,
    ]);
    expect(rows).toEqual([{ status: 'active' }]);
    const grants = await db.query(
      'SELECT 1 FROM provider_credential_grants WHERE credential_id = $1',
      [credential.id],
    );
    expect(grants.rowCount).toBe(1);
    await admin.request('DELETE', `/dashboard/api/credentials/${credential.id}`);
  });
});

describe('one service for the CLI and the API', () => {
  it('gw credentials update/disable/enable act on what the dashboard added, audited as cli', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const credential = (await addCredential(admin, tenant, 'mock-ok-cli-shared')).body;
    const updated = await runCliJson<Credential>(
      [
        'credentials',
        'update',
        '--id',
        credential.id,
        '--priority',
        '3',
        '--routing-mode',
        'byok_only',
      ],
      env,
    );
    expect(updated).toMatchObject({
      priority: 3,
      routing_mode: 'byok_only',
      fingerprint: credential.fingerprint,
    });
    await runCliJson(['credentials', 'disable', '--id', credential.id], env);
    const list = await admin.get<{ data: Credential[] }>(
      `/dashboard/api/orgs/${tenant.org_id}/credentials`,
    );
    expect(list.body.data.find((item) => item.id === credential.id)).toMatchObject({
      status: 'disabled',
      priority: 3,
    });
    const enabled = await runCliJson<Credential>(
      ['credentials', 'enable', '--id', credential.id],
      env,
    );
    expect(enabled.status).toBe('active');
    const { rows } = await db.query<{ action: string; user_id: string }>(
      'SELECT action, user_id FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id',
      [credential.id],
    );
    expect(rows.slice(1)).toEqual([
      { action: 'credential.update', user_id: 'cli' },
      { action: 'credential.disable', user_id: 'cli' },
      { action: 'credential.enable', user_id: 'cli' },
    ]);
    await admin.request('DELETE', `/dashboard/api/credentials/${credential.id}`);
  });
});

describe('a gateway without a master key', () => {
  it('answers 503 gw_provider_credentials_not_configured and stores nothing', async () => {
    const keyless = await startGateway({ ...env, CREDENTIALS_MASTER_KEY: '' });
    try {
      const admin = await signInTo(keyless, emails.admin);
      const answer = await addCredential(admin, tenant, 'mock-ok-keyless');
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('gw_provider_credentials_not_configured');
      const { rowCount } = await db.query(
        `SELECT 1 FROM provider_credentials WHERE org_id = $1 AND status <> 'deleted'`,
        [tenant.org_id],
      );
      expect(rowCount).toBe(0);
    } finally {
      await keyless.stop();
    }
  });
});
