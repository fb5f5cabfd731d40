// One app through the dashboard API: its page (status and counts), renaming, and deleting —
// softly: its connections are revoked and its API keys refused on every instance at once,
// while its usage and product users stay — on the real Redis and Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { connectionRevocationRefused, whileRefusing } from './support/refusing-trigger.js';
import { createMember, signInTo, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { connectAndExchange, createOAuthClient } from './support/oauth.js';
import {
  createApiKey,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually, firstNot200 } from './support/services.js';

const { env, db } = isolatedContext('dash-apps', { ownDatabase: true });
let gateways: [GatewayProcess, GatewayProcess];
let tenant: SeededOrg;

interface AppDetail {
  id: string;
  org_id: string;
  name: string;
  status: string;
  created_at: string;
  deleted_at: string | null;
  counts: { connections: number; api_keys: number; product_users: number };
}

const emails = { admin: uniqueEmail('apps-admin'), viewer: uniqueEmail('apps-viewer') };
const chat = (user: string) => ({
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hi' }],
  user,
});

beforeAll(async () => {
  gateways = (await Promise.all([startGateway(env), startGateway(env)])) as [
    GatewayProcess,
    GatewayProcess,
  ];
  tenant = await seed(env);
  await createMember(env, emails.admin, tenant.org_id, 'admin');
  await createMember(env, emails.viewer, tenant.org_id, 'viewer');
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('an app', () => {
  it('answers its status and counts: active connections, working keys, product users', async () => {
    const viewer = await signInTo(gateways[0], emails.viewer);
    for (const user of ['a', 'b']) {
      const answer = await postJson(
        `${gateways[0].url}/v1/chat/completions`,
        chat(user),
        bearer(tenant.api_key),
      );
      expect(answer.status).toBe(200);
    }
    const revoked = await createApiKey(env, tenant.app_connection_id);
    await postJson(`${gateways[0].url}/v1/chat/completions`, chat('c'), bearer(revoked.key));
    const admin = await signInTo(gateways[0], emails.admin);
    await admin.post(`/dashboard/api/api-keys/${revoked.id}/revoke`);
    const answer = await viewer.get<AppDetail>(`/dashboard/api/apps/${tenant.app_id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: tenant.app_id,
      org_id: tenant.org_id,
      name: expect.any(String),
      status: 'active',
      created_at: expect.any(String),
      deleted_at: null,
      counts: { connections: 1, api_keys: 1, product_users: 3 },
    });
  });

  it('is renamed by an admin (audited), not by a viewer; an empty name is refused', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const renamed = await admin.request<AppDetail>(
      'PATCH',
      `/dashboard/api/apps/${tenant.app_id}`,
      {
        name: '  Support bot v2 ',
      },
    );
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Support bot v2');
    const { rows } = await db.query<{ details: { name: string } }>(
      `SELECT details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'app.rename'`,
      [tenant.app_id],
    );
    expect(rows.map((row) => row.details.name)).toEqual(['Support bot v2']);
    const empty = await admin.request<ErrorBody>('PATCH', `/dashboard/api/apps/${tenant.app_id}`, {
      name: '   ',
    });
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toMatch(/^name: /);
    const viewer = await signInTo(gateways[0], emails.viewer);
    const refused = await viewer.request<ErrorBody>(
      'PATCH',
      `/dashboard/api/apps/${tenant.app_id}`,
      {
        name: 'nope',
      },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
  });

  it('refuses names that display as something else (bidirectional overrides, C1 controls), changing nothing', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const before = await db.query<{ name: string }>('SELECT name FROM apps WHERE id = $1', [
      tenant.app_id,
    ]);
    for (const name of [
      'Support\u202Etob', // displays as "Supportbot"
      'Billing\u2067 isolate',
      'mark\u200Fed',
      'next\u0085line',
    ]) {
      const refused = await admin.request<ErrorBody>(
        'PATCH',
        `/dashboard/api/apps/${tenant.app_id}`,
        {
          name,
        },
      );
      expect(refused.status, JSON.stringify(name)).toBe(400);
      expect(refused.body.error.code).toBe('gw_invalid_request');
      expect(refused.body.error.message).toMatch(/^name: must not contain (control|bidirectional)/);
      const created = await admin.request<ErrorBody>(
        'POST',
        `/dashboard/api/orgs/${tenant.org_id}/apps`,
        { name },
      );
      expect(created.status, JSON.stringify(name)).toBe(400);
    }
    const after = await db.query<{ name: string }>('SELECT name FROM apps WHERE id = $1', [
      tenant.app_id,
    ]);
    expect(after.rows).toEqual(before.rows);
    const { rows } = await db.query('SELECT 1 FROM apps WHERE org_id = $1 AND name ~ $2', [
      tenant.org_id,
      '[\u202E\u2067\u200F\u0085]',
    ]);
    expect(rows).toEqual([]);
    // right-to-left text itself is a name like any other
    const hebrew = await admin.request<{ name: string }>(
      'POST',
      `/dashboard/api/orgs/${tenant.org_id}/apps`,
      { name: 'עוזר תמיכה' },
    );
    expect(hebrew.status).toBe(201);
  });

  it('a connection is renamed with PATCH on the connection', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const renamed = await admin.request<{ name: string; status: string }>(
      'PATCH',
      `/dashboard/api/connections/${tenant.app_connection_id}`,
      { name: 'Web' },
    );
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Web', status: 'active' });
  });

  it('a PATCH naming nothing to change is refused, changing and auditing nothing (decision 584)', async () => {
    const admin = await signInTo(gateways[0], emails.admin);
    const path = `/dashboard/api/connections/${tenant.app_connection_id}`;
    const audited = async (): Promise<unknown[]> =>
      (
        await db.query(
          `SELECT id FROM dashboard_audit_log WHERE org_id = $1 AND action = 'connection.update'`,
          [tenant.org_id],
        )
      ).rows;
    const before = await db.query('SELECT updated_at FROM app_connections WHERE id = $1', [
      tenant.app_connection_id,
    ]);
    const auditedBefore = await audited();
    const refused = await admin.request<ErrorBody>('PATCH', path, {});
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'body: name at least one field to change',
    });
    const after = await db.query('SELECT updated_at FROM app_connections WHERE id = $1', [
      tenant.app_connection_id,
    ]);
    expect(after.rows).toEqual(before.rows);
    expect(await audited()).toEqual(auditedBefore);
  });
});

describe('deleting an app', () => {
  it('deletes its OAuth clients, revokes its connections (also OAuth ones of other organizations), keys and tokens on every instance at once, keeps its usage and product users, and leaves the list', async () => {
    const org = await seed(env);
    const email = uniqueEmail('app-deleter');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0], email);
    const second = await admin.post<{ id: string }>(
      `/dashboard/api/apps/${org.app_id}/connections`,
      {
        name: 'second',
      },
    );
    const secondKey = await admin.post<{ id: string; key: string }>(
      `/dashboard/api/connections/${second.body.id}/api-keys`,
    );
    for (const [gateway, key] of [
      [gateways[0], org.api_key],
      [gateways[1], secondKey.body.key],
    ] as const) {
      const answer = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chat('kept'),
        bearer(key),
      );
      expect(answer.status).toBe(200);
    }
    // Another organization connected the app by OAuth consent: its token works, paid by it.
    const oauthClient = await createOAuthClient(env, org.app_id, ['https://app.example.com/cb']);
    const connectingEmail = uniqueEmail('oauth-user');
    const connecting = await runCliJson<{ personal_org_id: string }>(
      ['admin', 'create-user', '--email', connectingEmail, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    await runCliJson(
      ['wallet', 'topup', '--org-id', connecting.personal_org_id, '--amount', '5'],
      env,
    );
    const token = await connectAndExchange(
      gateways[0].url,
      await signInTo(gateways[0], connectingEmail),
      oauthClient,
    );
    const viaOAuth = await postJson(
      `${gateways[0].url}/v1/chat/completions`,
      chat('kept'),
      bearer(token.access_token),
    );
    expect(viaOAuth.status).toBe(200);
    const records = await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM usage_records WHERE app_id = $1',
        [org.app_id],
      );
      return rows[0]!.n === 3 ? rows[0]!.n : undefined;
    });

    const deleted = await admin.request<AppDetail>('DELETE', `/dashboard/api/apps/${org.app_id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({
      status: 'deleted',
      deleted_at: expect.any(String),
      counts: { connections: 0, api_keys: 0, product_users: 1 },
    });
    const refusedHere = await postJson<ErrorBody>(
      `${gateways[0].url}/v1/chat/completions`,
      chat('kept'),
      bearer(org.api_key),
    );
    expect(refusedHere.status).toBe(401);
    expect(refusedHere.body.error.code).toBe('gw_key_inactive');
    const tokenRefused = await postJson<ErrorBody>(
      `${gateways[0].url}/v1/chat/completions`,
      chat('kept'),
      bearer(token.access_token),
    );
    expect(tokenRefused.status).toBe(401);
    const clients = await db.query('SELECT status FROM oauth_clients WHERE id = $1', [
      oauthClient.client_id,
    ]);
    expect(clients.rows).toEqual([{ status: 'deleted' }]);
    // the other instance refuses it once the invalidation arrives (served until then; its
    // cache alone would keep the key for AUTH_CACHE_TTL_MS, 30 s)
    const refusedThere = await firstNot200(() =>
      postJson<ErrorBody>(
        `${gateways[1].url}/v1/chat/completions`,
        chat('kept'),
        bearer(secondKey.body.key),
      ),
    );
    expect(refusedThere.status).toBe(401);

    const connections = await db.query<{ status: string }>(
      'SELECT DISTINCT status FROM app_connections WHERE app_id = $1',
      [org.app_id],
    );
    expect(connections.rows).toEqual([{ status: 'revoked' }]);
    const kept = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_records WHERE app_id = $1',
      [org.app_id],
    );
    expect(kept.rows[0]!.n).toBe(records);
    const list = await admin.get<{ data: { id: string }[] }>(
      `/dashboard/api/orgs/${org.org_id}/apps`,
    );
    expect(list.body.data.map((app) => app.id)).not.toContain(org.app_id);
    const audit = await db.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'app.delete'`,
      [org.app_id],
    );
    expect(audit.rows).toEqual([{ details: { name: expect.any(String) } }]);
    // Each connection is revoked by the one rule, audited in the organization that owns it.
    const revocations = await db.query<{ org_id: string; user_id: string }>(
      `SELECT org_id, user_id FROM dashboard_audit_log
        WHERE action = 'connection.revoke' AND object_id IN
              (SELECT id FROM app_connections WHERE app_id = $1)
        ORDER BY org_id = $2 DESC, id`,
      [org.app_id, org.org_id],
    );
    expect(revocations.rows).toHaveLength(3);
    expect(revocations.rows.filter((row) => row.org_id === org.org_id)).toHaveLength(2);
    expect(revocations.rows.find((row) => row.org_id === connecting.personal_org_id)).toBeDefined();
    const noClient = await admin.post<ErrorBody>(
      `/dashboard/api/apps/${org.app_id}/oauth-clients`,
      {
        name: 'late',
        redirect_uris: ['https://app.example.com/cb'],
      },
    );
    expect(noClient.status).toBe(409);

    // Nothing new under a deleted app; deleting again changes nothing.
    const rename = await admin.request<ErrorBody>('PATCH', `/dashboard/api/apps/${org.app_id}`, {
      name: 'back',
    });
    expect(rename.status).toBe(409);
    expect(rename.body.error.code).toBe('gw_conflict');
    const connection = await admin.post<ErrorBody>(
      `/dashboard/api/apps/${org.app_id}/connections`,
      {
        name: 'late',
      },
    );
    expect(connection.status).toBe(409);
    const key = await admin.post<ErrorBody>(
      `/dashboard/api/connections/${second.body.id}/api-keys`,
    );
    expect(key.status).toBe(409);
    const again = await admin.request<AppDetail>('DELETE', `/dashboard/api/apps/${org.app_id}`);
    expect(again.status).toBe(200);
    expect(again.body.deleted_at).toBe(deleted.body.deleted_at);
    const entries = await db.query(
      `SELECT 1 FROM dashboard_audit_log WHERE object_id = $1 AND action = 'app.delete'`,
      [org.app_id],
    );
    expect(entries.rowCount).toBe(1);
    const page = await admin.get<AppDetail>(`/dashboard/api/apps/${org.app_id}`);
    expect(page.body.status).toBe('deleted');
  });

  it('is all or nothing: a failure half-way leaves the app and every key working, and a retry finishes (decision 412)', async () => {
    const org = await seed(env);
    const email = uniqueEmail('app-half-deleter');
    await createMember(env, email, org.org_id, 'admin');
    const admin = await signInTo(gateways[0], email);
    const keys = [org.api_key];
    const connectionIds = [org.app_connection_id];
    for (const name of ['second', 'third']) {
      const connection = await admin.post<{ id: string }>(
        `/dashboard/api/apps/${org.app_id}/connections`,
        { name },
      );
      const key = await admin.post<{ key: string }>(
        `/dashboard/api/connections/${connection.body.id}/api-keys`,
      );
      keys.push(key.body.key);
      connectionIds.push(connection.body.id);
    }
    // The last connection's revocation fails (as a dropped database connection would).
    const failing = [...connectionIds].sort().at(-1)!;
    await whileRefusing(db, connectionRevocationRefused(failing), async () => {
      const failed = await admin.request('DELETE', `/dashboard/api/apps/${org.app_id}`);
      expect(failed.status).toBe(500);
      const apps = await db.query('SELECT status FROM apps WHERE id = $1', [org.app_id]);
      expect(apps.rows).toEqual([{ status: 'active' }]);
      const connections = await db.query(
        'SELECT DISTINCT status FROM app_connections WHERE app_id = $1',
        [org.app_id],
      );
      expect(connections.rows).toEqual([{ status: 'active' }]);
      for (const key of keys) {
        const answer = await postJson(
          `${gateways[0].url}/v1/chat/completions`,
          chat('k'),
          bearer(key),
        );
        expect(answer.status).toBe(200);
      }
      // still on the app list, where an admin can delete it again
      const list = await admin.get<{ data: { id: string }[] }>(
        `/dashboard/api/orgs/${org.org_id}/apps`,
      );
      expect(list.body.data.map((app) => app.id)).toContain(org.app_id);
    });
    const deleted = await admin.request<AppDetail>('DELETE', `/dashboard/api/apps/${org.app_id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({
      status: 'deleted',
      counts: { connections: 0, api_keys: 0 },
    });
    for (const key of keys) {
      const refused = await postJson<ErrorBody>(
        `${gateways[0].url}/v1/chat/completions`,
        chat('k'),
        bearer(key),
      );
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('gw_key_inactive');
    }
    const audit = await db.query(
      `SELECT 1 FROM dashboard_audit_log WHERE object_id = $1 AND action = 'app.delete'`,
      [org.app_id],
    );
    expect(audit.rowCount).toBe(1);
  });

  it('needs admin or owner', async () => {
    const viewer = await signInTo(gateways[0], emails.viewer);
    const refused = await viewer.request<ErrorBody>(
      'DELETE',
      `/dashboard/api/apps/${tenant.app_id}`,
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
    const { rows } = await db.query('SELECT status FROM apps WHERE id = $1', [tenant.app_id]);
    expect(rows).toEqual([{ status: 'active' }]);
  });
});
