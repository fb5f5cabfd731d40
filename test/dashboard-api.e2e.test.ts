// The management API behind the dashboard: connections, members, the audit log and the model
// list, driven as a browser would (cookie, CSRF token, Origin), against the real services.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  DashboardClient,
  signInTo,
  TEST_PASSWORD,
  uniqueEmail,
} from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  createApiKey,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { PROVIDER_IDS } from '../src/providers/registry.js';

const { env, db } = isolatedContext('dashboard-api');
let gateway: GatewayProcess;
let tenant: SeededOrg;
interface Connection {
  id: string;
  name: string;
  status: string;
  credit_mode: string;
  requires_product_user: boolean;
}

const emails = {
  owner: uniqueEmail('owner'),
  admin: uniqueEmail('admin'),
  viewer: uniqueEmail('viewer'),
};

const signedIn = (email: string): Promise<DashboardClient> => signInTo(gateway, email);

beforeAll(async () => {
  gateway = await startGateway(env);
  tenant = await seed(env);
  for (const [role, email] of Object.entries(emails)) {
    await createMember(env, email, tenant.org_id, role);
  }
});

afterAll(async () => {
  await gateway?.stop();
});

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

describe('connections', () => {
  it('are created with their settings, listed, and changed; an API key of the connection sees a change at once', async () => {
    const admin = await signedIn(emails.admin);
    const created = await admin.post<Connection>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
      {
        name: 'Mobile app',
        credit_mode: 'track_only',
      },
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Mobile app',
      status: 'active',
      credit_mode: 'track_only',
      overrun_policy: 'limit_output',
      requires_product_user: false,
    });
    const list = await admin.get<{ data: Connection[] }>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
    );
    expect(list.body.data.map((connection) => connection.id)).toContain(created.body.id);

    const key = await createApiKey(env, created.body.id);
    const before = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(key.key));
    expect(before.status).toBe(200);

    const changed = await admin.request<Connection>(
      'PATCH',
      `/dashboard/api/connections/${created.body.id}`,
      {
        requires_product_user: true,
      },
    );
    expect(changed.status).toBe(200);
    expect(changed.body.requires_product_user).toBe(true);
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      chat,
      bearer(key.key),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('gw_product_user_credits_required');

    const revoked = await admin.request<Connection>(
      'DELETE',
      `/dashboard/api/connections/${created.body.id}`,
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    const dead = await postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, {
      ...bearer(key.key),
      'x-gw-external-user-id': 'someone',
    });
    expect(dead.status).toBe(401);
    expect(dead.body.error.code).toBe('gw_key_inactive');
  });

  it('refuse bad settings with the field named, and viewers', async () => {
    const admin = await signedIn(emails.admin);
    const bad = await admin.post<ErrorBody>(`/dashboard/api/apps/${tenant.app_id}/connections`, {
      name: 'x',
      credit_mode: 'free_for_all',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^credit_mode: /);
    const viewer = await signedIn(emails.viewer);
    const refused = await viewer.post<ErrorBody>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
      {
        name: 'x',
      },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
  });
});

describe('members', () => {
  it('join by an invitation they accept, change role, and leave; an organization keeps an owner; all of it audited', async () => {
    const newcomer = uniqueEmail('newcomer');
    const created = await runCliJson<{ id: string }>(
      ['admin', 'create-user', '--email', newcomer, '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    const admin = await signedIn(emails.admin);
    const invitations = `/dashboard/api/orgs/${tenant.org_id}/invitations`;
    const asOwner = await admin.post<ErrorBody>(invitations, { email: newcomer, role: 'owner' });
    expect(asOwner.status).toBe(403);
    expect(asOwner.body.error.code).toBe('gw_role_forbidden');
    const invited = await admin.post<{ id: string; role: string }>(invitations, {
      email: newcomer.toUpperCase(),
      role: 'member',
    });
    expect(invited.status).toBe(201);
    const self = await signedIn(newcomer);
    const accepted = await self.post<{ status: string }>(
      `/dashboard/api/user/invitations/${invited.body.id}/accept`,
    );
    expect(accepted.body.status).toBe('accepted');
    const added = { body: { user_id: created.id } };
    const again = await admin.post<ErrorBody>(invitations, { email: newcomer, role: 'viewer' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('gw_conflict');
    // the direct way in is gone: a member is added by invitation only
    const direct = await admin.post<ErrorBody>(`/dashboard/api/orgs/${tenant.org_id}/members`, {
      email: newcomer,
      role: 'viewer',
    });
    expect(direct.status).toBe(405);

    const member = `/dashboard/api/orgs/${tenant.org_id}/members/${added.body.user_id}`;
    const demoted = await admin.request<{ role: string }>('PATCH', member, { role: 'viewer' });
    expect(demoted.body.role).toBe('viewer');
    const left = await self.request('DELETE', member);
    expect(left.status).toBe(200);
    expect((await self.get<ErrorBody>(`/dashboard/api/orgs/${tenant.org_id}/apps`)).status).toBe(
      404,
    );

    const owner = await signedIn(emails.owner);
    const ownerId = (await owner.get<{ user: { id: string } }>('/auth/session')).body.user.id;
    const lastOwner = await owner.request<ErrorBody>(
      'PATCH',
      `/dashboard/api/orgs/${tenant.org_id}/members/${ownerId}`,
      { role: 'admin' },
    );
    expect(lastOwner.status).toBe(409);
    expect(lastOwner.body.error.message).toBe('an organization keeps at least one owner');
    const leave = await owner.request<ErrorBody>(
      'DELETE',
      `/dashboard/api/orgs/${tenant.org_id}/members/${ownerId}`,
    );
    expect(leave.status).toBe(409);

    const log = await owner.get<{ data: { action: string; object_id: string; email: string }[] }>(
      `/dashboard/api/orgs/${tenant.org_id}/audit-log`,
    );
    expect(log.status).toBe(200);
    const actions = log.body.data
      .filter((entry) => entry.object_id === added.body.user_id)
      .map((entry) => entry.action);
    expect(actions).toEqual(['member.remove', 'member.change_role', 'member.add']);
    const viewer = await signedIn(emails.viewer);
    expect((await viewer.get(`/dashboard/api/orgs/${tenant.org_id}/audit-log`)).status).toBe(403);
  });
});

describe('one member', () => {
  interface Member {
    user_id: string;
    email: string;
    role: string;
    created_at: string;
  }

  it('is read by any member of the organization, as the list shows it; anyone else is not found, and so is another organization', async () => {
    const viewer = await signedIn(emails.viewer);
    const owner = await signedIn(emails.owner);
    const ownerId = (await owner.get<{ user: { id: string } }>('/auth/session')).body.user.id;
    const path = (orgId: string, userId: string) =>
      `/dashboard/api/orgs/${orgId}/members/${encodeURIComponent(userId)}`;
    const one = await viewer.get<Member>(path(tenant.org_id, ownerId));
    expect(one.status).toBe(200);
    const list = await viewer.get<{ data: Member[] }>(
      `/dashboard/api/orgs/${tenant.org_id}/members?limit=200`,
    );
    expect(one.body).toEqual(list.body.data.find((member) => member.user_id === ownerId));
    expect(one.body).toMatchObject({ email: emails.owner, role: 'owner' });

    // another tenant: its member is no member here, and its organization is not the viewer's
    const other = await seed(env, ['--name', 'Other Tenant']);
    const stranger = await createMember(env, uniqueEmail('stranger'), other.org_id, 'owner');
    const refused: Array<[string, string]> = [
      [tenant.org_id, stranger.id],
      [tenant.org_id, 'usr_000000000000000000000'],
      [other.org_id, stranger.id],
      [other.org_id, ownerId],
      [stranger.personal_org_id, stranger.id],
    ];
    for (const [orgId, userId] of refused) {
      const answer = await viewer.get<ErrorBody>(path(orgId, userId));
      expect(answer.status, `${orgId} ${userId}`).toBe(404);
      expect(answer.body.error.code).toBe('gw_not_found');
    }
    // the stranger reads their own organization's member, not this one's
    const strangerClient = await signedIn(
      (
        await db.query<{ email: string }>('SELECT email FROM dashboard_users WHERE id = $1', [
          stranger.id,
        ])
      ).rows[0]!.email,
    );
    expect((await strangerClient.get(path(other.org_id, stranger.id))).status).toBe(200);
    expect((await strangerClient.get(path(tenant.org_id, ownerId))).status).toBe(404);
    const anonymous = await fetch(`${gateway.url}${path(tenant.org_id, ownerId)}`);
    expect(anonymous.status).toBe(401);
  });
});

describe('GET /models', () => {
  it('lists every model with its sell prices per million tokens, exact to 12 decimals', async () => {
    const client = await signedIn(emails.viewer);
    const models = await client.get<{
      data: {
        id: string;
        input_price_per_million_tokens: string;
        output_price_per_million_tokens: string;
        cache_write_price_per_million_tokens: string;
        cache_write_1h_price_per_million_tokens: string;
        cache_read_price_per_million_tokens: string;
      }[];
    }>('/models');
    expect(models.status).toBe(200);
    // A cache rate left unset is the vendor's multiple of the input rate: vendor_a writes at
    // 1.25× (2× for an hour) and reads at 0.1×; vendor_b reads at 0.5×.
    const { rows } = await db.query<{ id: string; input: string; output: string }>(
      `WITH ratios (vendor, write, write_1h, read) AS (
         VALUES ('vendor_a', 1.25, 2, 0.1), ('vendor_b', 1, 1, 0.5))
       SELECT id, to_char(input_price_per_token * 1000000, 'FM999999990.000000000000') AS input,
              to_char(output_price_per_token * 1000000, 'FM999999990.000000000000') AS output,
              to_char(COALESCE(cache_write_price_per_token, input_price_per_token * r.write)
                        * 1000000, 'FM999999990.000000000000') AS cache_write,
              to_char(COALESCE(cache_write_1h_price_per_token, input_price_per_token * r.write_1h)
                        * 1000000, 'FM999999990.000000000000') AS cache_write_1h,
              to_char(COALESCE(cache_read_price_per_token, input_price_per_token * r.read)
                        * 1000000, 'FM999999990.000000000000') AS cache_read
         FROM models JOIN ratios r USING (vendor)
        WHERE enabled AND vendor = ANY($1) ORDER BY id`,
      // Rows of vendors no provider serves (another test's) are not listed.
      [PROVIDER_IDS],
    );
    expect(
      models.body.data.map((model) => ({
        id: model.id,
        input: model.input_price_per_million_tokens,
        output: model.output_price_per_million_tokens,
        cache_write: model.cache_write_price_per_million_tokens,
        cache_write_1h: model.cache_write_1h_price_per_million_tokens,
        cache_read: model.cache_read_price_per_million_tokens,
      })),
    ).toEqual(rows);
    // The seeded vendor_a models write their cache at 1.25× the input rate (2× for an hour) and
    // read it at 0.1×.
    expect(
      models.body.data.find((model) => model.id === 'vendor_a/claude-haiku-4-5'),
    ).toMatchObject({
      input_price_per_million_tokens: '1.000000000000',
      cache_write_price_per_million_tokens: '1.250000000000',
      cache_write_1h_price_per_million_tokens: '2.000000000000',
      cache_read_price_per_million_tokens: '0.100000000000',
      web_search_price_per_search: '0.010000000000',
    });
    expect(models.body.data.find((model) => model.id === 'vendor_b/gpt-4o-mini')).toMatchObject({
      web_search_price_per_search: null,
    });
    const anonymous = await fetch(`${gateway.url}/models`);
    expect(anonymous.status).toBe(401);
  });
});
