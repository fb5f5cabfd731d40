// "What your account made recently" (decisions 419, 421, 477): GET
// /dashboard/api/user/made-recently lists the OAuth approvals, API keys, service keys, pending
// invitations, OAuth clients (registered or rotated), webhook endpoints and members (let in, or
// raised) one account made that still work, in every
// organization it is a member of, each with the route that revokes it. Against a live gateway
// on the real Redis and Postgres: another account — an admin of the same organization or of
// another — never sees them, and the listed revoke route keeps its own role rule (another
// organization's admin gets 404, a demoted member 403 for all but an approval). And an OAuth client whose
// app is deleted starts no authorization: it is answered as an unknown client (decision 420).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MadeKind } from '../src/accounts/made-by-account.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  createUser,
  signInTo,
  uniqueEmail,
  type DashboardClient,
} from './support/dashboard.js';
import { getJson, type ErrorBody } from './support/http.js';
import { responseSchema, schemaProblems } from './support/openapi-check.js';
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
  runCli,
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
let aliceId: string;

interface MadeItem {
  readonly kind: MadeKind;
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
  readonly invited_role: string | null;
  readonly url: string | null;
  readonly given_role: string | null;
  readonly member_role: string | null;
  readonly via_email: string | null;
  readonly revoke_method: 'POST' | 'DELETE';
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

async function newInvitation(user: DashboardClient, orgId: string, role: string) {
  return (await inviteTo(user, orgId, uniqueEmail('review-invited'), role)).id;
}

async function inviteTo(user: DashboardClient, orgId: string, email: string, role: string) {
  const created = await user.post<{ id: string; accept_token: string }>(
    `/dashboard/api/orgs/${orgId}/invitations`,
    { email, role },
  );
  expect(created.status).toBe(201);
  return created.body;
}

async function newClient(user: DashboardClient, appId: string, name: string): Promise<string> {
  const created = await user.post<{ client_id: string }>(
    `/dashboard/api/apps/${appId}/oauth-clients`,
    {
      name,
      redirect_uris: [CALLBACK],
    },
  );
  expect(created.status).toBe(201);
  return created.body.client_id;
}

async function rotateClientSecret(user: DashboardClient, clientId: string): Promise<void> {
  const rotated = await user.post(`/dashboard/api/oauth-clients/${clientId}/rotate-secret`, {
    grace_seconds: 0,
  });
  expect(rotated.status).toBe(200);
}

async function newWebhook(user: DashboardClient, orgId: string, url: string): Promise<string> {
  const created = await user.post<{ id: string }>(`/dashboard/api/orgs/${orgId}/webhooks`, {
    url,
    description: 'review hook',
  });
  expect(created.status).toBe(201);
  return created.body.id;
}

/** The item's own revoke route, as the page calls it. */
const revokeAs = <T = Record<string, unknown>>(user: DashboardClient, item: MadeItem) =>
  user.request<T>(item.revoke_method, item.revoke_path);

/** What each kind's revoke changed, read in Postgres. */
async function states(ids: Record<string, string>): Promise<Record<string, string>> {
  const { rows } = await db.query<{ id: string; state: string }>(
    `SELECT id, status AS state FROM org_invitations WHERE id = ANY($1)
     UNION ALL SELECT id, status FROM oauth_clients WHERE id = ANY($1)
     UNION ALL SELECT id, status FROM webhook_endpoints WHERE id = ANY($1)`,
    [Object.values(ids)],
  );
  const byId = new Map(rows.map((row) => [row.id, row.state]));
  return Object.fromEntries(
    Object.entries(ids).map(([name, id]) => [name, byId.get(id) ?? 'gone']),
  );
}

const summary = (items: readonly MadeItem[]) =>
  items
    .map((item) => `${item.kind} ${item.id} ${item.org_id} ${item.made_as} ${item.can_revoke}`)
    .sort();

/** Alice's role in the shared organization, set in Postgres (a demotion the tests need). */
const setAliceRole = (role: string) =>
  db.query(`UPDATE org_memberships SET role = $3 WHERE org_id = $1 AND user_id = $2`, [
    shared.org_id,
    aliceId,
    role,
  ]);

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
  aliceId = aliceUser.id;
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
    // what an intruder could also leave behind: an admin invitation to their own address, an
    // OAuth client whose secret they hold, a webhook endpoint of theirs
    const invitation = await newInvitation(alice, shared.org_id, 'admin');
    const answered = await newInvitation(alice, shared.org_id, 'member');
    const withdrawn = await alice.post(`/dashboard/api/invitations/${answered}/revoke`);
    expect(withdrawn.status).toBe(200);
    const registered = await newClient(alice, shared.app_id, 'alice client');
    await rotateClientSecret(alice, registered); // registered and rotated: listed once, as registered
    const teamClient = await createOAuthClient(env, shared.app_id, [CALLBACK], {
      name: 'team client',
    });
    await rotateClientSecret(alice, teamClient.client_id);
    const deletedClient = await newClient(alice, shared.app_id, 'alice deleted client');
    expect(
      (await alice.request('DELETE', `/dashboard/api/oauth-clients/${deletedClient}`)).status,
    ).toBe(200);
    const webhook = await newWebhook(alice, shared.org_id, 'https://hooks.example.com/alice');
    const deletedWebhook = await newWebhook(alice, shared.org_id, 'https://hooks.example.com/gone');
    expect(
      (
        await alice.request(
          'DELETE',
          `/dashboard/api/orgs/${shared.org_id}/webhooks/${deletedWebhook}`,
        )
      ).status,
    ).toBe(200);
    Object.assign(mine, {
      invitation,
      registered,
      teamClient: teamClient.client_id,
      webhook,
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
    const bobInvitation = await newInvitation(bob, shared.org_id, 'member');
    const bobClient = await newClient(bob, shared.app_id, 'bob client');
    const bobWebhook = await newWebhook(bob, shared.org_id, 'https://hooks.example.com/bob');
    const carolWebhook = await newWebhook(carol, other.org_id, 'https://hooks.example.com/carol');
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
        `invitation ${invitation} ${shared.org_id} invited true`,
        `oauth_client ${registered} ${shared.org_id} created true`,
        `oauth_client ${teamClient.client_id} ${shared.org_id} rotated true`,
        `webhook_endpoint ${webhook} ${shared.org_id} created true`,
      ].sort(),
    );
    // newest first: the webhook endpoint was made last, the team client rotated before it
    expect(answer.body.data.slice(0, 2).map((item) => item.id)).toEqual([
      webhook,
      teamClient.client_id,
    ]);
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
      invited_role: null,
      url: null,
      revoke_method: 'POST',
      revoke_path: `/dashboard/api/api-keys/${kept.id}/revoke`,
    });
    expect(byId.get(invitation)).toMatchObject({
      invited_role: 'admin',
      app_id: null,
      revoke_method: 'POST',
      revoke_path: `/dashboard/api/invitations/${invitation}/revoke`,
    });
    expect(byId.get(invitation)!.name).toMatch(/^review-invited/);
    // the answer, every kind in it, is as /openapi.json describes it
    const document = (await getJson(`${gateway.url}/openapi.json`)).body;
    const schema = responseSchema(document, PATH, 'get', 200);
    expect(new Set(answer.body.data.map((item) => item.kind)).size).toBe(6);
    expect(schemaProblems(document, schema, answer.body)).toEqual([]);
    const unknownKind = { ...answer.body, data: [{ ...byId.get(webhook), kind: 'session' }] };
    expect(schemaProblems(document, schema, unknownKind)).not.toEqual([]);
    expect(byId.get(registered)).toMatchObject({
      name: 'alice client',
      app_id: shared.app_id,
      revoke_method: 'DELETE',
      revoke_path: `/dashboard/api/oauth-clients/${registered}`,
    });
    expect(byId.get(registered)!.key_hint).toEqual(expect.any(String));
    expect(byId.get(teamClient.client_id)).toMatchObject({
      name: 'team client',
      revoke_method: 'DELETE',
      revoke_path: `/dashboard/api/oauth-clients/${teamClient.client_id}`,
    });
    expect(byId.get(webhook)).toMatchObject({
      url: 'https://hooks.example.com/alice',
      name: 'review hook',
      revoke_method: 'DELETE',
      revoke_path: `/dashboard/api/orgs/${shared.org_id}/webhooks/${webhook}`,
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
        `invitation ${bobInvitation} ${shared.org_id} invited true`,
        `oauth_client ${bobClient} ${shared.org_id} created true`,
        `webhook_endpoint ${bobWebhook} ${shared.org_id} created true`,
      ].sort(),
    );
    // Carol, of another organization, only hers
    expect(summary((await made(carol)).data)).toEqual(
      [
        `api_key ${carolKey.id} ${other.org_id} created true`,
        `webhook_endpoint ${carolWebhook} ${other.org_id} created true`,
      ].sort(),
    );
  });

  it("another organization's admin cannot revoke the listed items through their revoke routes: 404, and they keep working", async () => {
    const items = (await made(alice)).data;
    const before = await states(mine);
    for (const item of items.filter((item) => item.org_id === shared.org_id)) {
      const refused = await revokeAs<ErrorBody>(carol, item);
      expect(refused.status, item.kind).toBe(404);
      expect(refused.body.error.code).toBe('gw_not_found');
    }
    expect(summary((await made(alice)).data)).toEqual(summary(items));
    expect(await states(mine)).toEqual(before);
    expect(before).toMatchObject({
      invitation: 'pending',
      registered: 'active',
      teamClient: 'active',
      webhook: 'enabled',
    });
  });

  it('a member who is no longer an admin: all is listed, but only an approval is revocable by them (the other routes answer 403)', async () => {
    await setAliceRole('member');
    const items = (await made(alice)).data.filter((item) => item.org_id === shared.org_id);
    expect(summary(items)).toEqual(
      [
        `api_key ${mine.kept} ${shared.org_id} created false`,
        `api_key ${mine.rotated} ${shared.org_id} rotated false`,
        `service_key ${mine.serviceKey} ${shared.org_id} created false`,
        `oauth_approval ${mine.approval} ${shared.org_id} approved true`,
        `invitation ${mine.invitation} ${shared.org_id} invited false`,
        `oauth_client ${mine.registered} ${shared.org_id} created false`,
        `oauth_client ${mine.teamClient} ${shared.org_id} rotated false`,
        `webhook_endpoint ${mine.webhook} ${shared.org_id} created false`,
      ].sort(),
    );
    expect(new Set(items.map((item) => item.your_role))).toEqual(new Set(['member']));
    const before = await states(mine);
    for (const item of items.filter((item) => !item.can_revoke)) {
      const refused = await revokeAs<ErrorBody>(alice, item);
      expect(refused.status, item.kind).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');
    }
    expect(await states(mine)).toEqual(before);
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
      const revoked = await revokeAs(alice, item);
      expect(revoked.status, item.kind).toBe(200);
    }
    expect((await made(alice)).data).toEqual([]);
    const { rows } = await db.query<{ status: string }>(
      `SELECT status FROM api_keys WHERE id = ANY($1)
        UNION ALL SELECT status FROM service_keys WHERE id = ANY($1)`,
      [[mine.kept, mine.rotated, mine.serviceKey, mine.personalServiceKey]],
    );
    expect(rows.map((row) => row.status)).toEqual(['revoked', 'revoked', 'revoked', 'revoked']);
    expect(await states(mine)).toMatchObject({
      invitation: 'revoked',
      registered: 'deleted',
      teamClient: 'deleted',
      webhook: 'gone',
    });
    // Bob's are untouched
    expect((await made(bob)).data).toHaveLength(6);
  });

  it('an owner invitation sent by an owner since demoted to admin: listed, not revocable by them (its route answers 403)', async () => {
    await setAliceRole('owner');
    const invitation = await newInvitation(alice, shared.org_id, 'owner');
    const asOwner = (await made(alice)).data.find((item) => item.id === invitation)!;
    expect(asOwner).toMatchObject({ invited_role: 'owner', your_role: 'owner', can_revoke: true });
    await setAliceRole('admin');
    const asAdmin = (await made(alice)).data.find((item) => item.id === invitation)!;
    expect(asAdmin).toMatchObject({ your_role: 'admin', can_revoke: false });
    const refused = await revokeAs<ErrorBody>(alice, asAdmin);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
    expect(await states({ invitation })).toEqual({ invitation: 'pending' });
    // Bob, an admin too, cannot either; an owner can
    expect((await revokeAs(bob, asAdmin)).status).toBe(403);
    await setAliceRole('owner');
    expect((await revokeAs(alice, asAdmin)).status).toBe(200);
    expect(await states({ invitation })).toEqual({ invitation: 'revoked' });
    await setAliceRole('admin');
  });

  it('a webhook endpoint someone else made, whose address the account changed: listed while it still sends there', async () => {
    const teamHook = await newWebhook(bob, shared.org_id, 'https://hooks.example.com/team');
    const renamedHook = await newWebhook(bob, shared.org_id, 'https://hooks.example.com/named');
    const patch = (user: DashboardClient, id: string, body: Record<string, unknown>) =>
      user.request('PATCH', `/dashboard/api/orgs/${shared.org_id}/webhooks/${id}`, body);
    expect((await patch(alice, teamHook, { url: 'https://collector.example.net/in' })).status).toBe(
      200,
    );
    // a change that leaves the address alone is no redirection
    expect((await patch(alice, renamedHook, { description: 'renamed by alice' })).status).toBe(200);
    const redirected = (await made(alice)).data.filter((item) => item.kind === 'webhook_endpoint');
    expect(summary(redirected)).toEqual([
      `webhook_endpoint ${teamHook} ${shared.org_id} redirected true`,
    ]);
    expect(redirected[0]).toMatchObject({
      url: 'https://collector.example.net/in',
      revoke_method: 'DELETE',
      revoke_path: `/dashboard/api/orgs/${shared.org_id}/webhooks/${teamHook}`,
    });
    // nothing of it in Bob's list beyond what he made: he created it
    expect(summary((await made(bob)).data.filter((item) => item.id === teamHook))).toEqual([
      `webhook_endpoint ${teamHook} ${shared.org_id} created true`,
    ]);
    // pointed back by Bob: it no longer sends where Alice set it
    expect((await patch(bob, teamHook, { url: 'https://hooks.example.com/team' })).status).toBe(
      200,
    );
    expect((await made(alice)).data.map((item) => item.id)).not.toContain(teamHook);
    // pointed away again, then deleted from the list
    expect(
      (await patch(alice, teamHook, { url: 'https://collector.example.net/again' })).status,
    ).toBe(200);
    const again = (await made(alice)).data.find((item) => item.id === teamHook)!;
    expect(again).toMatchObject({
      made_as: 'redirected',
      url: 'https://collector.example.net/again',
    });
    expect((await revokeAs(alice, again)).status).toBe(200);
    expect(await states({ teamHook, renamedHook })).toEqual({
      teamHook: 'gone',
      renamedHook: 'enabled',
    });
    expect((await made(alice)).data).toEqual([]);
  });

  it('an endpoint the account pointed away twice at once is listed while it sends where the edit applied last set it', async () => {
    const hook = await newWebhook(bob, shared.org_id, 'https://hooks.example.com/twice');
    const patch = (url: string) =>
      alice.request('PATCH', `/dashboard/api/orgs/${shared.org_id}/webhooks/${hook}`, { url });
    expect((await patch('https://hooks.example.com/twice-back')).status).toBe(200);
    expect((await patch('https://collector.example.net/twice')).status).toBe(200);
    // As two edits sent at once leave it when the one applied last began its transaction
    // first (it waited on the endpoint's row): its entry is numbered last but dated first.
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM dashboard_audit_log WHERE object_id = $1 AND action = 'webhook.update'
        ORDER BY id`,
      [hook],
    );
    expect(rows).toHaveLength(2);
    await db.query(
      `UPDATE dashboard_audit_log SET created_at =
         (SELECT created_at - interval '1 millisecond' FROM dashboard_audit_log WHERE id = $1)
        WHERE id = $2`,
      [rows[0]!.id, rows[1]!.id],
    );
    const listed = (await made(alice)).data.find((item) => item.id === hook);
    expect(listed).toMatchObject({
      made_as: 'redirected',
      url: 'https://collector.example.net/twice',
    });
    expect((await revokeAs(alice, listed!)).status).toBe(200);
    expect((await made(alice)).data).toEqual([]);
  });

  it("a member who is no longer an admin is not shown the address an admin since gave an endpoint they created: only admins read endpoints' addresses", async () => {
    const hook = await newWebhook(alice, shared.org_id, 'https://hooks.example.com/alice-made');
    // Bob points it at an address that is itself the credential (as chat webhooks are)
    const secretUrl = 'https://hooks.example.com/services/T0/B0/bob-only-secret';
    const moved = await bob.request(
      'PATCH',
      `/dashboard/api/orgs/${shared.org_id}/webhooks/${hook}`,
      { url: secretUrl },
    );
    expect(moved.status).toBe(200);
    const asAdmin = (await made(alice)).data.find((item) => item.id === hook)!;
    expect(asAdmin).toMatchObject({ made_as: 'created', url: secretUrl, can_revoke: true });
    await setAliceRole('member');
    try {
      // the endpoints' own list refuses a member ...
      const listed = await alice.get<ErrorBody>(`/dashboard/api/orgs/${shared.org_id}/webhooks`);
      expect(listed.status).toBe(403);
      // ... and so the review does not hand the address over either
      const asMember = (await made(alice)).data.find((item) => item.id === hook)!;
      expect(asMember).toMatchObject({
        made_as: 'created',
        your_role: 'member',
        can_revoke: false,
        url: null,
        name: 'review hook',
      });
    } finally {
      await setAliceRole('admin');
    }
    expect((await bob.request('DELETE', asAdmin.revoke_path)).status).toBe(200);
    expect((await made(alice)).data).toEqual([]);
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

  it("takes the page's longest window, computed on the browser's clock before it is sent, and reads at most 365 days", async () => {
    // what the account page sends for "the last 365 days": now minus 365 days, as the browser
    // reckons it, which reaches the gateway a little later (or off by the clocks' skew)
    const sent = new Date(Date.now() - 365 * DAY_MS - 60_000).toISOString();
    const before = Date.now();
    const answer = await made(alice, `?since=${encodeURIComponent(sent)}`);
    const after = Date.now();
    // read from 365 days back, not further
    const sinceMs = Date.parse(answer.since);
    expect(sinceMs).toBeGreaterThanOrEqual(before - 365 * DAY_MS);
    expect(sinceMs).toBeLessThanOrEqual(after - 365 * DAY_MS);
  });

  it('names a password reset only when it is in the window asked for', async () => {
    const since = new Date(Date.now() - 10 * DAY_MS);
    // a reset 30 minutes before the window starts, then one inside it
    const resetAt = async (at: Date) =>
      db.query(
        `INSERT INTO dashboard_audit_log
           (org_id, user_id, action, object_type, object_id, details, created_at)
         VALUES ($1, $2, 'user.password_reset', 'user', $2, '{"via":"email_link"}', $3)`,
        [alicePersonalOrg, aliceId, at],
      );
    await resetAt(new Date(since.getTime() - 30 * 60_000));
    const query = `?since=${encodeURIComponent(since.toISOString())}`;
    expect((await made(alice, query)).password_reset_at).toBeNull();
    const inside = new Date(since.getTime() + 60_000);
    await resetAt(inside);
    expect((await made(alice, query)).password_reset_at).toBe(inside.toISOString());
  });

  it("lists what the account made while another member's write, started earlier, waited: the read's bound is not that write's entry", async () => {
    // A quiet organization (its entries two hours old), then Bob's endpoint edit starts and
    // waits on the endpoint's row (held here, as a delivery or another edit may hold it);
    // meanwhile Erin makes a key. Bob's entry is numbered after Erin's but dated before it.
    const quiet = await seed(env, ['--name', 'Review Quiet']);
    const emails = { erin: uniqueEmail('review-erin'), bob: uniqueEmail('review-quiet-bob') };
    await Promise.all([
      createMember(env, emails.erin, quiet.org_id, 'admin'),
      createMember(env, emails.bob, quiet.org_id, 'admin'),
    ]);
    const [erin, quietBob] = await Promise.all([
      signInTo(gateway, emails.erin),
      signInTo(gateway, emails.bob),
    ]);
    const hook = await newWebhook(quietBob, quiet.org_id, 'https://hooks.example.com/quiet');
    await db.query(
      `UPDATE dashboard_audit_log SET created_at = created_at - interval '2 hours'
        WHERE org_id = $1`,
      [quiet.org_id],
    );
    const since = new Date(Date.now() - 60_000);
    const holder = await db.connect();
    let bobsEdit: Promise<{ status: number }> | undefined;
    let keyId = '';
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE', [hook]);
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      bobsEdit = quietBob.request('PATCH', `/dashboard/api/orgs/${quiet.org_id}/webhooks/${hook}`, {
        description: 'edited while a delivery held it',
      });
      await expect
        .poll(async () => {
          const waiting = await db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [rows[0]!.pid],
          );
          return waiting.rows[0]!.n;
        })
        .toBe(1);
      keyId = (await newApiKey(erin, quiet.app_connection_id, 'erin key')).id;
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    expect((await bobsEdit).status).toBe(200);
    const listed = await made(erin, `?since=${encodeURIComponent(since.toISOString())}`);
    expect(listed.data.map((item) => item.id)).toEqual([keyId]);
  });

  it('refuses what it does not take, and answers only a signed-in user', async () => {
    for (const query of [
      `?since=${encodeURIComponent(new Date(Date.now() - 367 * DAY_MS).toISOString())}`,
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

describe('members the account let in or raised (decision 477)', () => {
  /** Erin (whose account an intruder used), Frank: admins here. */
  let team: SeededOrg;
  /** Gina: an admin here only. */
  let away: SeededOrg;
  let erin: DashboardClient;
  let frank: DashboardClient;
  let gina: DashboardClient;
  const ids: Record<string, string> = {};
  const emails: Record<string, string> = {};

  /** A new user, signed in, who accepts the invitation Erin sends them with `role`. */
  async function invitedByErin(name: string, role: string): Promise<string> {
    emails[name] = uniqueEmail(`review-${name}`);
    const user = await createUser(env, emails[name]);
    const invitation = await inviteTo(erin, team.org_id, emails[name], role);
    const signedIn = await signInTo(gateway, emails[name]);
    const accepted = await signedIn.post(
      `/dashboard/api/user/invitations/${invitation.id}/accept`,
      { token: invitation.accept_token },
    );
    expect(accepted.status).toBe(200);
    ids[`${name}Invitation`] = invitation.id;
    return user.id;
  }

  async function memberOfTeam(name: string, role: string): Promise<string> {
    emails[name] = uniqueEmail(`review-${name}`);
    return (await createMember(env, emails[name], team.org_id, role)).id;
  }

  const changeRole = (user: DashboardClient, userId: string, role: string) =>
    user.request('PATCH', `/dashboard/api/orgs/${team.org_id}/members/${userId}`, { role });

  /** Each named member's role in the team organization now (gone: not a member). */
  async function teamRoles(): Promise<Record<string, string>> {
    const { rows } = await db.query<{ user_id: string; role: string }>(
      'SELECT user_id, role FROM org_memberships WHERE org_id = $1',
      [team.org_id],
    );
    const byId = new Map(rows.map((row) => [row.user_id, row.role]));
    return Object.fromEntries(
      ['mallory', 'sam', 'pat', 'ray', 'lou', 'tina', 'olive'].map((name) => [
        name,
        byId.get(ids[name]!) ?? 'gone',
      ]),
    );
  }

  const members = async (user: DashboardClient) =>
    (await made(user)).data.filter((item) => item.kind === 'member');

  const setErinRole = (role: string) =>
    db.query(`UPDATE org_memberships SET role = $3 WHERE org_id = $1 AND user_id = $2`, [
      team.org_id,
      ids.erin,
      role,
    ]);

  beforeAll(async () => {
    [team, away] = await Promise.all([
      seed(env, ['--name', 'Review Team']),
      seed(env, ['--name', 'Review Away']),
    ]);
    emails.erin = uniqueEmail('review-erin');
    emails.frank = uniqueEmail('review-frank');
    emails.gina = uniqueEmail('review-gina');
    const [erinUser, frankUser] = await Promise.all([
      createMember(env, emails.erin, team.org_id, 'admin'),
      createMember(env, emails.frank, team.org_id, 'admin'),
      createMember(env, emails.gina, away.org_id, 'admin'),
    ]);
    ids.erin = erinUser.id;
    ids.frank = frankUser.id;
    [erin, frank, gina] = await Promise.all([
      signInTo(gateway, emails.erin),
      signInTo(gateway, emails.frank),
      signInTo(gateway, emails.gina),
    ]);
  });

  it('lists who joined through its invitation and whose role it raised, once each; not a lowered role, not itself, and nobody else sees them', async () => {
    // the intruder invites their own address as admin and accepts at once
    ids.mallory = await invitedByErin('mallory', 'admin');
    // someone invited as a member, then raised by the same account: listed once, as raised
    ids.sam = await invitedByErin('sam', 'member');
    expect((await changeRole(erin, ids.sam, 'admin')).status).toBe(200);
    // a colleague raised (an accomplice, or a colleague whose account the intruder also holds)
    ids.pat = await memberOfTeam('pat', 'viewer');
    expect((await changeRole(erin, ids.pat, 'admin')).status).toBe(200);
    // lowered by Erin: never listed
    ids.lou = await memberOfTeam('lou', 'admin');
    expect((await changeRole(erin, ids.lou, 'viewer')).status).toBe(200);
    // raised, then lowered by Erin herself, then raised by Frank to what she first gave: her
    // latest change is no raise
    ids.olive = await memberOfTeam('olive', 'viewer');
    expect((await changeRole(erin, ids.olive, 'admin')).status).toBe(200);
    expect((await changeRole(erin, ids.olive, 'member')).status).toBe(200);
    expect((await changeRole(frank, ids.olive, 'admin')).status).toBe(200);
    // Frank raises someone: his, not Erin's
    ids.tina = await memberOfTeam('tina', 'viewer');
    expect((await changeRole(frank, ids.tina, 'member')).status).toBe(200);
    // no route lets anyone raise themselves; an entry saying Erin did is still not listed
    await db.query(
      `INSERT INTO dashboard_audit_log (org_id, user_id, action, object_type, object_id, details)
       VALUES ($1, $2, 'member.change_role', 'member', $2, '{"from":"member","to":"admin"}')`,
      [team.org_id, ids.erin],
    );

    const answer = await made(erin);
    expect(summary(answer.data)).toEqual(
      [
        `member ${ids.mallory} ${team.org_id} joined true`,
        `member ${ids.sam} ${team.org_id} raised true`,
        `member ${ids.pat} ${team.org_id} raised true`,
      ].sort(),
    );
    const byId = new Map(answer.data.map((item) => [item.id, item]));
    expect(byId.get(ids.mallory)).toMatchObject({
      org_name: 'Review Team',
      your_role: 'admin',
      name: emails.mallory!.toLowerCase(),
      given_role: 'admin',
      member_role: 'admin',
      invited_role: null,
      app_id: null,
      url: null,
      revoke_method: 'DELETE',
      revoke_path: `/dashboard/api/orgs/${team.org_id}/members/${ids.mallory}`,
    });
    expect(byId.get(ids.pat)).toMatchObject({
      name: emails.pat!.toLowerCase(),
      given_role: 'admin',
      member_role: 'admin',
      revoke_path: `/dashboard/api/orgs/${team.org_id}/members/${ids.pat}`,
    });
    // the newer of its two facts: raised after joining
    expect(byId.get(ids.sam)).toMatchObject({ given_role: 'admin', member_role: 'admin' });
    expect(Date.parse(byId.get(ids.sam)!.created_at)).toBeGreaterThan(
      Date.parse(byId.get(ids.mallory)!.created_at),
    );
    // as /openapi.json describes it
    const document = (await getJson(`${gateway.url}/openapi.json`)).body;
    const schema = responseSchema(document, PATH, 'get', 200);
    expect(schemaProblems(document, schema, answer)).toEqual([]);

    // Frank, an admin of the same organization: his raises only
    expect(summary(await members(frank))).toEqual(
      [
        `member ${ids.tina} ${team.org_id} raised true`,
        `member ${ids.olive} ${team.org_id} raised true`,
      ].sort(),
    );
    // Gina, of another organization: nothing
    expect((await made(gina)).data).toEqual([]);
  });

  it("another organization's admin gets 404 from the listed remove route, and nobody is removed", async () => {
    const items = await members(erin);
    expect(items).toHaveLength(3);
    const before = await teamRoles();
    for (const item of items) {
      const refused = await revokeAs<ErrorBody>(gina, item);
      expect(refused.status, item.id).toBe(404);
      expect(refused.body.error.code).toBe('gw_not_found');
    }
    expect(await teamRoles()).toEqual(before);
    expect(before).toMatchObject({ mallory: 'admin', sam: 'admin', pat: 'admin' });
  });

  it('a reviewer no longer an admin: listed, can_revoke false, and the remove route answers 403', async () => {
    await setErinRole('member');
    try {
      const items = await members(erin);
      expect(summary(items)).toEqual(
        [
          `member ${ids.mallory} ${team.org_id} joined false`,
          `member ${ids.sam} ${team.org_id} raised false`,
          `member ${ids.pat} ${team.org_id} raised false`,
        ].sort(),
      );
      const before = await teamRoles();
      for (const item of items) {
        const refused = await revokeAs<ErrorBody>(erin, item);
        expect(refused.status, item.id).toBe(403);
        expect(refused.body.error.code).toBe('gw_role_forbidden');
      }
      expect(await teamRoles()).toEqual(before);
    } finally {
      await setErinRole('admin');
    }
  });

  it('a member since made an owner: still listed, removable by an owner only', async () => {
    await setErinRole('owner');
    expect((await changeRole(erin, ids.pat!, 'owner')).status).toBe(200);
    // made owner by Erin herself: the newer raise, to owner, which she may undo as owner
    const asOwner = (await members(erin)).find((item) => item.id === ids.pat)!;
    expect(asOwner).toMatchObject({ given_role: 'owner', member_role: 'owner', can_revoke: true });
    await setErinRole('admin');
    const asAdmin = (await members(erin)).find((item) => item.id === ids.pat)!;
    expect(asAdmin).toMatchObject({ your_role: 'admin', can_revoke: false });
    const refused = await revokeAs<ErrorBody>(erin, asAdmin);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('gw_role_forbidden');
    expect((await teamRoles()).pat).toBe('owner');
  });

  it('removing through the listed route: the member is gone from the organization and from the list', async () => {
    const mallory = (await members(erin)).find((item) => item.id === ids.mallory)!;
    expect(mallory.can_revoke).toBe(true);
    const removed = await revokeAs<{ removed: boolean }>(erin, mallory);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: true });
    const { rows } = await db.query(
      'SELECT 1 FROM org_memberships WHERE org_id = $1 AND user_id = $2',
      [team.org_id, ids.mallory],
    );
    expect(rows).toEqual([]);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.mallory);
  });

  it('a raised role changed again by someone else leaves the list (one who joined through the invitation stays, as joined)', async () => {
    ids.ray = await memberOfTeam('ray', 'viewer');
    expect((await changeRole(erin, ids.ray, 'admin')).status).toBe(200);
    expect(summary((await members(erin)).filter((item) => item.id === ids.ray))).toEqual([
      `member ${ids.ray} ${team.org_id} raised true`,
    ]);
    expect((await changeRole(frank, ids.ray, 'member')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.ray);
    // Sam's raise is undone by Frank; Sam still joined through Erin's invitation
    expect((await changeRole(frank, ids.sam!, 'member')).status).toBe(200);
    expect((await members(erin)).find((item) => item.id === ids.sam)).toMatchObject({
      made_as: 'joined',
      given_role: 'member',
      member_role: 'member',
    });
    expect(await teamRoles()).toMatchObject({ ray: 'member', sam: 'member', lou: 'viewer' });
  });

  it('a raised role changed away and back by someone else is theirs, not hers: not listed', async () => {
    ids.quinn = await memberOfTeam('quinn', 'viewer');
    expect((await changeRole(erin, ids.quinn, 'admin')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).toContain(ids.quinn);
    expect((await changeRole(frank, ids.quinn, 'member')).status).toBe(200);
    expect((await changeRole(frank, ids.quinn, 'admin')).status).toBe(200);
    // Quinn holds the role Erin gave, but Frank gave it last: reviewing Erin's account, it
    // is not hers to undo; reviewing Frank's, it is his
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.quinn);
    expect(summary((await members(frank)).filter((item) => item.id === ids.quinn))).toEqual([
      `member ${ids.quinn} ${team.org_id} raised true`,
    ]);
  });

  it('one who accepted her invitation while already a member (added by the operator) did not join through it', async () => {
    emails.vic = uniqueEmail('review-vic');
    const vic = await createUser(env, emails.vic);
    const invitation = await inviteTo(erin, team.org_id, emails.vic, 'admin');
    const added = await runCli(
      ['admin', 'add-member', '--email', emails.vic, '--org-id', team.org_id, '--role', 'viewer'],
      env,
    );
    expect(added.code).toBe(0);
    const signedIn = await signInTo(gateway, emails.vic);
    const accepted = await signedIn.post<{ status: string }>(
      `/dashboard/api/user/invitations/${invitation.id}/accept`,
      { token: invitation.accept_token },
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe('accepted');
    expect((await members(erin)).map((item) => item.id)).not.toContain(vic.id);
  });

  it('members let in or raised by one Erin raised are listed through them; their changes do not take hers off (decision 531)', async () => {
    ids.ann = await memberOfTeam('ann', 'viewer');
    ids.cal = await memberOfTeam('cal', 'viewer');
    expect((await changeRole(erin, ids.ann, 'admin')).status).toBe(200);
    const ann = await signInTo(gateway, emails.ann!);
    // Ann raises Cal, and lets Dee in as an admin
    expect((await changeRole(ann, ids.cal, 'admin')).status).toBe(200);
    emails.dee = uniqueEmail('review-dee');
    const dee = await createUser(env, emails.dee);
    ids.dee = dee.id;
    const invitation = await inviteTo(ann, team.org_id, emails.dee, 'admin');
    const deeSignedIn = await signInTo(gateway, emails.dee);
    expect(
      (
        await deeSignedIn.post(`/dashboard/api/user/invitations/${invitation.id}/accept`, {
          token: invitation.accept_token,
        })
      ).status,
    ).toBe(200);
    // Cal lowers Ann and raises her back (the chain 529 left open): she stays Erin's
    const cal = await signInTo(gateway, emails.cal!);
    expect((await changeRole(cal, ids.ann, 'member')).status).toBe(200);
    expect((await changeRole(cal, ids.ann, 'admin')).status).toBe(200);

    const listed = (await members(erin)).filter((item) =>
      [ids.ann, ids.cal, ids.dee].includes(item.id),
    );
    expect(
      listed
        .map((item) => `${item.name} ${item.made_as} ${item.given_role} via ${item.via_email}`)
        .sort(),
    ).toEqual(
      [
        `${emails.ann!.toLowerCase()} raised admin via null`,
        `${emails.cal!.toLowerCase()} raised admin via ${emails.ann!.toLowerCase()}`,
        `${emails.dee.toLowerCase()} joined admin via ${emails.ann!.toLowerCase()}`,
      ].sort(),
    );
    expect(listed.every((item) => item.can_revoke)).toBe(true);
    // Frank reached none of them
    const franks = (await members(frank)).map((item) => item.id);
    expect(franks).not.toContain(ids.cal);
    expect(franks).not.toContain(ids.dee);
    // removing Cal through the listed route
    const removeCal = listed.find((item) => item.id === ids.cal)!;
    expect((await erin.request(removeCal.revoke_method, removeCal.revoke_path)).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.cal);
  });

  it('a member Erin raised, removed and let in again by someone else in the role she gave, is not hers', async () => {
    ids.uma = await memberOfTeam('uma', 'viewer');
    expect((await changeRole(erin, ids.uma, 'admin')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).toContain(ids.uma);
    const removed = await frank.request(
      'DELETE',
      `/dashboard/api/orgs/${team.org_id}/members/${ids.uma}`,
    );
    expect(removed.status).toBe(200);
    const invitation = await inviteTo(frank, team.org_id, emails.uma!, 'admin');
    const uma = await signInTo(gateway, emails.uma!);
    const accepted = await uma.post(`/dashboard/api/user/invitations/${invitation.id}/accept`, {
      token: invitation.accept_token,
    });
    expect(accepted.status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.uma);
    expect(summary((await members(frank)).filter((item) => item.id === ids.uma))).toEqual([
      `member ${ids.uma} ${team.org_id} joined true`,
    ]);
  });

  it('a raise the account lowered only part of the way back is still its raise (decision 493)', async () => {
    // viewer → admin → member: the last change is a lowering, the two together a raise
    ids.quill = await memberOfTeam('quill', 'viewer');
    expect((await changeRole(erin, ids.quill, 'admin')).status).toBe(200);
    expect((await changeRole(erin, ids.quill, 'member')).status).toBe(200);
    expect((await members(erin)).find((item) => item.id === ids.quill)).toMatchObject({
      made_as: 'raised',
      given_role: 'member',
      member_role: 'member',
      can_revoke: true,
    });
    // raised, then "changed" to the role she gave: the latest change is no raise on its own
    ids.xena = await memberOfTeam('xena', 'viewer');
    expect((await changeRole(erin, ids.xena, 'admin')).status).toBe(200);
    expect((await changeRole(erin, ids.xena, 'admin')).status).toBe(200);
    expect(summary((await members(erin)).filter((item) => item.id === ids.xena))).toEqual([
      `member ${ids.xena} ${team.org_id} raised true`,
    ]);
    // lowered all the way back to where she found it: no raise left
    expect((await changeRole(erin, ids.quill, 'viewer')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.quill);
    // Only her changes of the membership there is now count: Wes, raised by her, removed and
    // let in again as an admin by the operator, then "changed" by her to admin: no raise of
    // hers on this membership.
    ids.wes = await memberOfTeam('wes', 'viewer');
    expect((await changeRole(erin, ids.wes, 'admin')).status).toBe(200);
    const removed = await frank.request(
      'DELETE',
      `/dashboard/api/orgs/${team.org_id}/members/${ids.wes}`,
    );
    expect(removed.status).toBe(200);
    const added = await runCli(
      ['admin', 'add-member', '--email', emails.wes!, '--org-id', team.org_id, '--role', 'admin'],
      env,
    );
    expect(added.code).toBe(0);
    expect((await changeRole(erin, ids.wes, 'admin')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.wes);
  });

  it('two members the account raised cannot take each other off its list (decision 529)', async () => {
    ids.kit = await memberOfTeam('kit', 'viewer');
    ids.lee = await memberOfTeam('lee', 'viewer');
    expect((await changeRole(erin, ids.kit, 'admin')).status).toBe(200);
    expect((await changeRole(erin, ids.lee, 'admin')).status).toBe(200);
    const [kit, lee] = await Promise.all([
      signInTo(gateway, emails.kit!),
      signInTo(gateway, emails.lee!),
    ]);
    // each "changes" the other to the role they hold: one request each, no role moves
    expect((await changeRole(kit, ids.lee, 'admin')).status).toBe(200);
    expect((await changeRole(lee, ids.kit, 'admin')).status).toBe(200);
    const listed = async () =>
      summary((await members(erin)).filter((item) => [ids.kit, ids.lee].includes(item.id)));
    expect(await listed()).toEqual(
      [
        `member ${ids.kit} ${team.org_id} raised true`,
        `member ${ids.lee} ${team.org_id} raised true`,
      ].sort(),
    );
    // lowered and raised back by one the account raised: still the account's raise
    expect((await changeRole(kit, ids.lee, 'member')).status).toBe(200);
    expect((await changeRole(kit, ids.lee, 'admin')).status).toBe(200);
    expect(await listed()).toEqual(
      [
        `member ${ids.kit} ${team.org_id} raised true`,
        `member ${ids.lee} ${team.org_id} raised true`,
      ].sort(),
    );
    // a colleague the account did not raise changing it still makes it theirs (512)
    expect((await changeRole(frank, ids.kit, 'member')).status).toBe(200);
    expect((await changeRole(frank, ids.kit, 'admin')).status).toBe(200);
    expect((await members(erin)).map((item) => item.id)).not.toContain(ids.kit);
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
