// "What your account made recently" (decision 419): GET /dashboard/api/user/made-recently lists
// the OAuth approvals, API keys and service keys one account made that still work, in every
// organization it is a member of, each with the route that revokes it. Against a live gateway
// on the real Redis and Postgres: another account — an admin of the same organization or of
// another — never sees them, and the listed revoke route keeps its own role rule (another
// organization's admin gets 404, a demoted member 403 for a key). And an OAuth client whose
// app is deleted starts no authorization: it is answered as an unknown client (decision 420).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import type { ErrorBody } from './support/http.js';
import {
  authorizeQuery,
  connectAndExchange,
  createOAuthClient,
  getAuthorize,
  pkcePair,
  type RegisteredClient,
} from './support/oauth.js';
import {
  createApiKey,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';

const { env, db } = isolatedContext('made-recently');
const CALLBACK = 'http://127.0.0.1:9/callback';
const DAY_MS = 86_400_000;
let gateway: GatewayProcess;
/** Alice, Bob: admins here. Dave: a member. */
let shared: SeededOrg;
/** Carol: an admin here only. */
let other: SeededOrg;
/** The OAuth app's own organization. */
let maker: SeededOrg;
let client: RegisteredClient;
let alice: DashboardClient;
let bob: DashboardClient;
let carol: DashboardClient;
let alicePersonalOrg: string;

interface MadeItem {
  readonly kind: 'oauth_approval' | 'api_key' | 'service_key';
  readonly id: string;
  readonly org_id: string;
  readonly org_name: string;
  readonly your_role: string;
  readonly created_at: string;
  readonly made_as: string;
  readonly app_id: string | null;
  readonly app_name: string | null;
  readonly name: string | null;
  readonly key_hint: string | null;
  readonly client_name: string | null;
  readonly revoke_path: string;
  readonly can_revoke: boolean;
}
interface MadeRecently {
  readonly since: string;
  readonly password_reset_at: string | null;
  readonly data: MadeItem[];
  readonly truncated: boolean;
}

const PATH = '/dashboard/api/user/made-recently';

async function made(user: DashboardClient, query = ''): Promise<MadeRecently> {
  const answer = await user.get<MadeRecently>(`${PATH}${query}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

async function newApiKey(user: DashboardClient, connectionId: string, name: string) {
  const created = await user.post<{ id: string; key_hint: string }>(
    `/dashboard/api/connections/${connectionId}/api-keys`,
    { name },
  );
  expect(created.status).toBe(201);
  return created.body;
}

async function newServiceKey(user: DashboardClient, orgId: string): Promise<string> {
  const created = await user.post<{ id: string }>(`/dashboard/api/orgs/${orgId}/service-keys`, {});
  expect(created.status).toBe(201);
  return created.body.id;
}

const summary = (items: readonly MadeItem[]) =>
  items
    .map((item) => `${item.kind} ${item.id} ${item.org_id} ${item.made_as} ${item.can_revoke}`)
    .sort();

beforeAll(async () => {
  [gateway, shared, other, maker] = await Promise.all([
    startGateway(env),
    seed(env, ['--name', 'Review Shared']),
    seed(env, ['--name', 'Review Other']),
    seed(env, ['--name', 'Review Maker']),
  ]);
  const emails = {
    alice: uniqueEmail('review-alice'),
    bob: uniqueEmail('review-bob'),
    carol: uniqueEmail('review-carol'),
  };
  const [aliceUser] = await Promise.all([
    createMember(env, emails.alice, shared.org_id, 'admin'),
    createMember(env, emails.bob, shared.org_id, 'admin'),
    createMember(env, emails.carol, other.org_id, 'admin'),
  ]);
  alicePersonalOrg = aliceUser.personal_org_id;
  [alice, bob, carol] = await Promise.all([
    signInTo(gateway, emails.alice),
    signInTo(gateway, emails.bob),
    signInTo(gateway, emails.carol),
  ]);
  client = await createOAuthClient(env, maker.app_id, [CALLBACK], { name: 'Review Client' });
});

afterAll(() => gateway?.stop());

describe('GET /dashboard/api/user/made-recently', () => {
  const mine: Record<string, string> = {};

  it("lists what the account made that still works, in each of its organizations, and nobody else's", async () => {
    const kept = await newApiKey(alice, shared.app_connection_id, 'alice key');
    const revoked = await newApiKey(alice, shared.app_connection_id, 'alice revoked');
    expect((await alice.post(`/dashboard/api/api-keys/${revoked.id}/revoke`)).status).toBe(200);
    const rotatedAway = await newApiKey(alice, shared.app_connection_id, 'alice rotated');
    const rotation = await alice.post<{ id: string }>(
      `/dashboard/api/api-keys/${rotatedAway.id}/rotate`,
    );
    expect(rotation.status).toBe(201);
    const serviceKey = await newServiceKey(alice, shared.org_id);
    const personalServiceKey = await newServiceKey(alice, alicePersonalOrg);
    const approval = await connectAndExchange(gateway.url, alice, client, {
      orgId: shared.org_id,
    });
    Object.assign(mine, {
      kept: kept.id,
      rotated: rotation.body.id,
      serviceKey,
      personalServiceKey,
      approval: approval.app_connection_id,
    });
    // Others' things in the same organization, and the operator's (the CLI's) key
    const bobKey = await newApiKey(bob, shared.app_connection_id, 'bob key');
    const bobServiceKey = await newServiceKey(bob, shared.org_id);
    const bobApproval = await connectAndExchange(gateway.url, bob, client, {
      orgId: shared.org_id,
    });
    await createApiKey(env, shared.app_connection_id);
    const carolKey = await newApiKey(carol, other.app_connection_id, 'carol key');

    const answer = await alice.get<MadeRecently>(PATH);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(summary(answer.body.data)).toEqual(
      [
        `api_key ${kept.id} ${shared.org_id} created true`,
        `api_key ${rotation.body.id} ${shared.org_id} rotated true`,
        `service_key ${serviceKey} ${shared.org_id} created true`,
        `service_key ${personalServiceKey} ${alicePersonalOrg} created true`,
        `oauth_approval ${approval.app_connection_id} ${shared.org_id} approved true`,
      ].sort(),
    );
    // newest first: the approval was made last
    expect(answer.body.data[0]!.id).toBe(approval.app_connection_id);
    expect(answer.body.truncated).toBe(false);
    expect(answer.body.password_reset_at).toBeNull();
    // the default window is the last 30 days
    const sinceMs = Date.parse(answer.body.since);
    expect(Math.abs(Date.now() - 30 * DAY_MS - sinceMs)).toBeLessThan(60_000);
    const byId = new Map(answer.body.data.map((item) => [item.id, item]));
    expect(byId.get(kept.id)).toMatchObject({
      org_name: 'Review Shared',
      your_role: 'admin',
      app_id: shared.app_id,
      app_org_name: null,
      name: 'alice key',
      key_hint: kept.key_hint,
      client_name: null,
      revoke_path: `/dashboard/api/api-keys/${kept.id}/revoke`,
    });
    expect(byId.get(serviceKey)).toMatchObject({
      revoke_path: `/dashboard/api/service-keys/${serviceKey}/revoke`,
      app_id: null,
    });
    expect(byId.get(approval.app_connection_id)).toMatchObject({
      app_id: maker.app_id,
      app_org_name: 'Review Maker',
      client_name: 'Review Client',
      key_hint: null,
      revoke_path: `/dashboard/api/connected-apps/${approval.app_connection_id}/revoke`,
    });

    // Bob, an admin of the same organization, sees his own and none of Alice's
    const bobs = await made(bob);
    expect(summary(bobs.data)).toEqual(
      [
        `api_key ${bobKey.id} ${shared.org_id} created true`,
        `service_key ${bobServiceKey} ${shared.org_id} created true`,
        `oauth_approval ${bobApproval.app_connection_id} ${shared.org_id} approved true`,
      ].sort(),
    );
    // Carol, of another organization, only hers
    expect(summary((await made(carol)).data)).toEqual([
      `api_key ${carolKey.id} ${other.org_id} created true`,
    ]);
  });

  it("another organization's admin cannot revoke the listed items through their revoke routes: 404, and they keep working", async () => {
    const items = (await made(alice)).data;
    for (const item of items.filter((item) => item.org_id === shared.org_id)) {
      const refused = await carol.post<ErrorBody>(item.revoke_path);
      expect(refused.status, item.kind).toBe(404);
      expect(refused.body.error.code).toBe('gw_not_found');
    }
    expect(summary((await made(alice)).data)).toEqual(summary(items));
  });

  it('a member who is no longer an admin: keys are listed but not revocable by them (the key routes answer 403); an approval a member may revoke', async () => {
    await db.query(
      `UPDATE org_memberships SET role = 'member' WHERE org_id = $1 AND user_id = $2`,
      [shared.org_id, (await alice.get<{ user: { id: string } }>('/auth/session')).body.user.id],
    );
    const items = (await made(alice)).data.filter((item) => item.org_id === shared.org_id);
    expect(summary(items)).toEqual(
      [
        `api_key ${mine.kept} ${shared.org_id} created false`,
        `api_key ${mine.rotated} ${shared.org_id} rotated false`,
        `service_key ${mine.serviceKey} ${shared.org_id} created false`,
        `oauth_approval ${mine.approval} ${shared.org_id} approved true`,
      ].sort(),
    );
    expect(new Set(items.map((item) => item.your_role))).toEqual(new Set(['member']));
    for (const item of items.filter((item) => !item.can_revoke)) {
      const refused = await alice.post<ErrorBody>(item.revoke_path);
      expect(refused.status, item.kind).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');
    }
    const approval = items.find((item) => item.kind === 'oauth_approval')!;
    const revoked = await alice.post<{ status: string }>(approval.revoke_path);
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM app_connections WHERE id = $1',
      [approval.id],
    );
    expect(rows[0]!.status).toBe('revoked');
    expect((await made(alice)).data.map((item) => item.id)).not.toContain(approval.id);
  });

  it('the account revokes what it made through the listed routes, and the list empties', async () => {
    await db.query(
      `UPDATE org_memberships SET role = 'admin' WHERE org_id = $1 AND role = 'member'`,
      [shared.org_id],
    );
    for (const item of (await made(alice)).data) {
      expect(item.can_revoke).toBe(true);
      const revoked = await alice.post<{ status: string }>(item.revoke_path);
      expect(revoked.status, item.kind).toBe(200);
      expect(revoked.body.status).toBe('revoked');
    }
    expect((await made(alice)).data).toEqual([]);
    const { rows } = await db.query<{ status: string }>(
      `SELECT status FROM api_keys WHERE id = ANY($1)
        UNION ALL SELECT status FROM service_keys WHERE id = ANY($1)`,
      [[mine.kept, mine.rotated, mine.serviceKey, mine.personalServiceKey]],
    );
    expect(rows.map((row) => row.status)).toEqual(['revoked', 'revoked', 'revoked', 'revoked']);
    // Bob's are untouched
    expect((await made(bob)).data).toHaveLength(3);
  });

  it('reads the window asked for: an older key is listed with an earlier since', async () => {
    const old = await newApiKey(alice, shared.app_connection_id, 'alice older');
    await db.query(`UPDATE api_keys SET created_at = now() - interval '40 days' WHERE id = $1`, [
      old.id,
    ]);
    expect((await made(alice)).data.map((item) => item.id)).not.toContain(old.id);
    const since = new Date(Date.now() - 45 * DAY_MS).toISOString();
    const wider = await made(alice, `?since=${encodeURIComponent(since)}`);
    expect(wider.since).toBe(since);
    expect(wider.data.map((item) => item.id)).toEqual([old.id]);
    const fresh = await made(alice, `?since=${encodeURIComponent(new Date().toISOString())}`);
    expect(fresh.data).toEqual([]);
  });

  it('refuses what it does not take, and answers only a signed-in user', async () => {
    for (const query of [
      `?since=${encodeURIComponent(new Date(Date.now() - 366 * DAY_MS).toISOString())}`,
      `?since=${encodeURIComponent(new Date(Date.now() + DAY_MS).toISOString())}`,
      '?since=yesterday',
      '?user_id=someone-else',
    ]) {
      const refused = await alice.get<ErrorBody>(`${PATH}${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body.error.code).toBe('gw_invalid_request');
    }
    const anonymous = await fetch(`${gateway.url}${PATH}`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as ErrorBody).error.code).toBe('gw_session_required');
    const withKey = await fetch(`${gateway.url}${PATH}`, {
      headers: { authorization: `Bearer ${shared.api_key}` },
    });
    expect(withKey.status).toBe(401);
  });
});

describe('an OAuth client whose app is deleted', () => {
  it('starts no authorization: it is answered exactly as an unknown client', async () => {
    const gone = await seed(env, ['--name', 'Review Gone Maker']);
    const goneClient = await createOAuthClient(env, gone.app_id, [CALLBACK]);
    const challenge = pkcePair().challenge;
    const ask = (clientId: string, accept?: string) =>
      getAuthorize(
        gateway.url,
        authorizeQuery({ clientId, redirectUri: CALLBACK, state: 's', challenge }),
        { cookie: alice.cookie!, ...(accept !== undefined && { accept }) },
      );
    // while the app is active, its client opens the consent page
    expect((await ask(goneClient.client_id)).status).toBe(200);
    // The dashboard deletes an app's clients before the app; a client left active beside a
    // deleted app (an older version's deletion, a write made by hand) is what is checked here.
    await db.query(`UPDATE apps SET status = 'deleted', deleted_at = now() WHERE id = $1`, [
      gone.app_id,
    ]);

    const unknownId = 'gw_client_doesnotexist0000000';
    for (const accept of ['application/json', undefined]) {
      const deleted = await ask(goneClient.client_id, accept);
      const unknown = await ask(unknownId, accept);
      expect(deleted.status).toBe(400);
      expect(deleted.location).toBeNull();
      expect(deleted.status).toBe(unknown.status);
      expect(deleted.headers.get('content-type')).toBe(unknown.headers.get('content-type'));
      expect(deleted.text).toBe(unknown.text);
    }
    const json = JSON.parse(
      (await ask(goneClient.client_id, 'application/json')).text,
    ) as ErrorBody;
    expect(json.error.code).toBe('gw_redirect_uri_mismatch');
    expect(json.error.message).toContain('unknown client_id');
  });
});
