// The dashboard API of OAuth: an app's OAuth clients (its maker's admins register, list and
// delete them; a secret is shown once), and an organization's connected apps (the apps its
// members connected by OAuth, what each spent, and revoking one) — with roles, CSRF, the
// audit log, and every write tried across tenants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatNano, numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import {
  createMember,
  signInTo,
  TEST_PASSWORD,
  uniqueEmail,
  type DashboardClient,
} from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  authorizeQuery,
  connect as connectWith,
  connectAndExchange,
  getAuthorize,
  pkcePair,
  postDecision,
  postForm,
  readConsentForm,
  type RegisteredClient,
} from './support/oauth.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('oauth-dash');
let gateway: GatewayProcess;
let maker: SeededOrg;
let payer: SeededOrg;
let makerAdmin: DashboardClient;
let makerViewer: DashboardClient;
/** Connects apps to the payer's wallet (an admin: the role that issues keys). */
let payerAdmin: DashboardClient;
let payerMember: DashboardClient;
let payerViewer: DashboardClient;
let outsider: DashboardClient;

interface OAuthClientView {
  client_id: string;
  client_secret?: string;
  client_secret_hint: string | null;
  public: boolean;
  redirect_uris: string[];
  status: string;
  app_id: string;
  org_id: string;
}
interface ConnectedApp {
  id: string;
  org_id: string;
  app_id: string;
  app_name: string;
  oauth_client_id: string;
  status: string;
  connected_by: string | null;
  token_issued_at: string | null;
  spend: {
    this_month: { cost: string; wallet_cost: string; requests: number };
    total: { cost: string; wallet_cost: string; requests: number };
  };
}

const CALLBACK = 'http://127.0.0.1:9/cb';
const clientsOf = (appId: string) => `/dashboard/api/apps/${appId}/oauth-clients`;
const connectedAppsOf = (orgId: string) => `/dashboard/api/orgs/${orgId}/connected-apps`;

async function member(orgId: string, role: string): Promise<DashboardClient> {
  const email = uniqueEmail(role);
  await createMember(env, email, orgId, role);
  return signInTo(gateway, email);
}

async function registerClient(body: Record<string, unknown> = {}): Promise<OAuthClientView> {
  const created = await makerAdmin.post<OAuthClientView>(clientsOf(maker.app_id), {
    name: 'Dash app',
    redirect_uris: [CALLBACK],
    ...body,
  });
  expect(created.status).toBe(201);
  return created.body;
}

const asRegistered = (view: OAuthClientView): RegisteredClient => ({
  client_id: view.client_id,
  redirect_uris: view.redirect_uris,
  ...(view.client_secret !== undefined && { client_secret: view.client_secret }),
});

beforeAll(async () => {
  gateway = await startGateway(env);
  [maker, payer] = await Promise.all([
    seed(env, ['--name', 'Maker']),
    seed(env, ['--name', 'Payer', '--wallet', '20.00']),
  ]);
  [makerAdmin, makerViewer, payerAdmin, payerMember, payerViewer] = await Promise.all([
    member(maker.org_id, 'admin'),
    member(maker.org_id, 'viewer'),
    member(payer.org_id, 'admin'),
    member(payer.org_id, 'member'),
    member(payer.org_id, 'viewer'),
  ]);
  const outsiderEmail = uniqueEmail('outsider');
  await runCliJson(['admin', 'create-user', '--email', outsiderEmail, '--password-stdin'], env, {
    stdin: TEST_PASSWORD,
  });
  outsider = await signInTo(gateway, outsiderEmail);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('OAuth clients in the dashboard API', () => {
  it('an admin registers a confidential client (its secret in this answer only) and a public one; the audit log records both', async () => {
    const confidential = await registerClient({
      name: 'Web app',
      redirect_uris: ['https://app.example.com/cb', CALLBACK],
    });
    expect(confidential).toMatchObject({
      client_id: expect.stringMatching(/^gw_client_/),
      client_secret: expect.stringMatching(/^gw_client_secret_[0-9A-Za-z]{43}$/),
      client_secret_hint: expect.stringMatching(/^gw_client_secret_.{4}…$/),
      public: false,
      redirect_uris: ['https://app.example.com/cb', CALLBACK],
      app_id: maker.app_id,
      org_id: maker.org_id,
      status: 'active',
    });
    const pub = await registerClient({ name: 'Phone app', public: true });
    expect(pub.public).toBe(true);
    expect(pub.client_secret).toBeUndefined();
    expect(pub.client_secret_hint).toBeNull();

    const list = await makerViewer.get<{ data: OAuthClientView[] }>(clientsOf(maker.app_id));
    expect(list.status).toBe(200);
    const listed = list.body.data.find((row) => row.client_id === confidential.client_id)!;
    expect(listed.client_secret).toBeUndefined();
    expect(JSON.stringify(list.body)).not.toContain(confidential.client_secret);
    const { rows } = await db.query<{ action: string; details: Record<string, unknown> }>(
      `SELECT action, details FROM dashboard_audit_log WHERE object_id = ANY($1) ORDER BY id`,
      [[confidential.client_id, pub.client_id]],
    );
    expect(rows.map((row) => row.action)).toEqual(['oauth_client.create', 'oauth_client.create']);
    expect(JSON.stringify(rows)).not.toContain(confidential.client_secret);
  });

  it('refuses bad redirect URIs naming the one at fault, viewers, and writes without the CSRF token', async () => {
    const bad = await makerAdmin.post<ErrorBody>(clientsOf(maker.app_id), {
      name: 'x',
      redirect_uris: [CALLBACK, 'http://app.example.com/cb'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toEqual({
      code: 'gw_invalid_request',
      message:
        'redirect_uris.1: http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https',
    });
    const empty = await makerAdmin.post<ErrorBody>(clientsOf(maker.app_id), {
      name: 'x',
      redirect_uris: [],
    });
    expect(empty.status).toBe(400);
    const viewer = await makerViewer.post<ErrorBody>(clientsOf(maker.app_id), {
      name: 'x',
      redirect_uris: [CALLBACK],
    });
    expect(viewer.status).toBe(403);
    expect(viewer.body.error.code).toBe('gw_role_forbidden');
    const noToken = await makerAdmin.post<ErrorBody>(
      clientsOf(maker.app_id),
      { name: 'x', redirect_uris: [CALLBACK] },
      { csrf: false },
    );
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
  });

  it('deleting a client revokes the connections made through it; another tenant cannot see or delete it', async () => {
    const doomed = await registerClient({ public: true });
    const token = await connectAndExchange(gateway.url, payerAdmin, asRegistered(doomed), {
      orgId: payer.org_id,
    });
    for (const path of [clientsOf(maker.app_id)]) {
      const foreignList = await outsider.get<ErrorBody>(path);
      expect(foreignList.status).toBe(404);
    }
    const foreignDelete = await outsider.request<ErrorBody>(
      'DELETE',
      `/dashboard/api/oauth-clients/${doomed.client_id}`,
    );
    expect(foreignDelete.status).toBe(404);
    expect(foreignDelete.body.error.code).toBe('gw_not_found');
    // the paying organization's members are not the client's owners either
    const payerDelete = await payerMember.request<ErrorBody>(
      'DELETE',
      `/dashboard/api/oauth-clients/${doomed.client_id}`,
    );
    expect(payerDelete.status).toBe(404);
    const works = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: 8 },
      bearer(token.access_token),
    );
    expect(works.status).toBe(200);

    const deleted = await makerAdmin.request<OAuthClientView>(
      'DELETE',
      `/dashboard/api/oauth-clients/${doomed.client_id}`,
    );
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('deleted');
    const again = await makerAdmin.request<ErrorBody>(
      'DELETE',
      `/dashboard/api/oauth-clients/${doomed.client_id}`,
    );
    expect(again.status).toBe(404);
    const list = await makerAdmin.get<{ data: OAuthClientView[] }>(clientsOf(maker.app_id));
    expect(list.body.data.map((row) => row.client_id)).not.toContain(doomed.client_id);
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: 8 },
      bearer(token.access_token),
    );
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('gw_key_inactive');
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM app_connections WHERE id = $1',
      [token.app_connection_id],
    );
    expect(rows).toEqual([{ status: 'revoked' }]);
  });
});

describe('connected apps of an organization', () => {
  it('lists the apps connected to the organization’s wallet with what each spent this month and in total', async () => {
    const client = asRegistered(await registerClient({ name: 'Spender', public: true }));
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
    });
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const answer = await postJson(
        `${gateway.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          messages: [{ role: 'user', content: `n${index}` }],
          max_tokens: 12,
        },
        bearer(token.access_token),
      );
      expect(answer.status).toBe(200);
      ids.push(answer.headers.get('x-request-id')!);
    }
    const ledger = await eventually(async () => {
      const { rows } = await db.query<{ cost: string; wallet: string; n: number }>(
        `SELECT sum(sell_cost)::text AS cost, sum(wallet_cost)::text AS wallet, count(*)::int AS n
           FROM usage_records WHERE app_connection_id = $1`,
        [token.app_connection_id],
      );
      return rows[0]!.n === 3 ? rows[0]! : undefined;
    });
    const list = await payerViewer.get<{ data: ConnectedApp[]; next_cursor: string | null }>(
      connectedAppsOf(payer.org_id),
    );
    expect(list.status).toBe(200);
    const app = list.body.data.find((row) => row.id === token.app_connection_id)!;
    const spent = {
      cost: formatNano(numericToNano(ledger.cost)),
      wallet_cost: formatNano(numericToNano(ledger.wallet)),
      requests: 3,
    };
    expect(app).toMatchObject({
      org_id: payer.org_id,
      app_id: maker.app_id,
      app_name: 'Seeded app',
      oauth_client_id: client.client_id,
      status: 'active',
      connected_by: expect.stringMatching(/^admin-.*@example\.com$/),
      token_issued_at: expect.any(String),
      spend: { this_month: spent, total: spent },
    });
    // its token, whose rate limits the payer's admins set (none yet)
    const { rows: tokens } = await db.query<{ id: string }>(
      "SELECT id FROM api_keys WHERE app_connection_id = $1 AND kind = 'oauth_token'",
      [token.app_connection_id],
    );
    expect(app).toMatchObject({
      token_id: tokens[0]!.id,
      requests_per_minute: null,
      product_user_requests_per_minute: null,
    });
    expect(numericToNano(spent.cost)).toBeGreaterThan(0n);
    // the app's maker sees neither the connection nor its spend among its app's connections
    const makerConnections = await makerAdmin.get<{ data: { id: string }[] }>(
      `/dashboard/api/apps/${maker.app_id}/connections`,
    );
    expect(makerConnections.body.data.map((row) => row.id)).toEqual([maker.app_connection_id]);
    const makerView = await makerAdmin.get<{ data: ConnectedApp[] }>(connectedAppsOf(maker.org_id));
    expect(makerView.body.data).toEqual([]);
  });

  it('a member revokes one (a viewer may not); revoking twice changes nothing; the audit log says who', async () => {
    const client = asRegistered(await registerClient({ public: true }));
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
    });
    const path = `/dashboard/api/connected-apps/${token.app_connection_id}/revoke`;
    const viewer = await payerViewer.post<ErrorBody>(path);
    expect(viewer.status).toBe(403);
    expect(viewer.body.error.code).toBe('gw_role_forbidden');
    const noToken = await payerMember.post<ErrorBody>(path, undefined, { csrf: false });
    expect(noToken.status).toBe(403);
    const revoked = await payerMember.post<ConnectedApp>(path);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: token.app_connection_id, status: 'revoked' });
    const again = await payerMember.post<ConnectedApp>(path);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('revoked');
    const { rows } = await db.query<{ action: string; org_id: string }>(
      `SELECT action, org_id FROM dashboard_audit_log WHERE object_id = $1 ORDER BY id`,
      [token.app_connection_id],
    );
    expect(rows).toEqual([
      { action: 'oauth_connection.create', org_id: payer.org_id },
      { action: 'connection.revoke', org_id: payer.org_id },
    ]);
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: 8 },
      bearer(token.access_token),
    );
    expect(refused.status).toBe(401);
  });

  it('is 404 across tenants: the maker, an outsider, and for connections that are not OAuth connections', async () => {
    const client = asRegistered(await registerClient({ public: true }));
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
    });
    const path = `/dashboard/api/connected-apps/${token.app_connection_id}/revoke`;
    for (const stranger of [outsider, makerAdmin]) {
      const list = await stranger.get<ErrorBody>(connectedAppsOf(payer.org_id));
      expect(list.status).toBe(404);
      const revoke = await stranger.post<ErrorBody>(path);
      expect(revoke.status).toBe(404);
      expect(revoke.body.error.code).toBe('gw_not_found');
      // nor through the generic connection routes
      const patch = await stranger.request<ErrorBody>(
        'PATCH',
        `/dashboard/api/connections/${token.app_connection_id}`,
        { credit_mode: 'disabled' },
      );
      expect(patch.status).toBe(404);
    }
    const plain = await makerAdmin.post<ErrorBody>(
      `/dashboard/api/connected-apps/${maker.app_connection_id}/revoke`,
    );
    expect(plain.status).toBe(404);
    const { rows } = await db.query<{ id: string; status: string }>(
      'SELECT id, status FROM app_connections WHERE id = ANY($1) ORDER BY id',
      [[token.app_connection_id, maker.app_connection_id]],
    );
    expect(rows.map((row) => row.status)).toEqual(['active', 'active']);
  });

  it('the paying organization’s admin revoking it as a connection also revokes its token', async () => {
    const admin = await member(payer.org_id, 'admin');
    const client = asRegistered(await registerClient({ public: true }));
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
    });
    const revoked = await admin.request<{ status: string; oauth_client_id: string }>(
      'DELETE',
      `/dashboard/api/connections/${token.app_connection_id}`,
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ status: 'revoked', oauth_client_id: client.client_id });
    const { rows } = await db.query<{ status: string }>(
      'SELECT status FROM api_keys WHERE app_connection_id = $1',
      [token.app_connection_id],
    );
    expect(rows).toEqual([{ status: 'revoked' }]);
    const issued = await admin.post<ErrorBody>(
      `/dashboard/api/connections/${token.app_connection_id}/api-keys`,
      {},
    );
    expect(issued.status).toBe(409);
  });
});

describe('who may make an organization pay for an app', () => {
  const chat = {
    model: 'vendor_b/gpt-4o-mini',
    messages: [{ role: 'user', content: 'x' }],
    max_tokens: 8,
  };

  async function signedInMember(
    orgId: string,
    role: string,
  ): Promise<{ browser: DashboardClient; userId: string; personalOrgId: string }> {
    const email = uniqueEmail(role);
    const created = await createMember(env, email, orgId, role);
    return {
      browser: await signInTo(gateway, email),
      userId: created.id,
      personalOrgId: created.personal_org_id,
    };
  }

  it('a member may not: the consent page does not offer the organization, and an approval naming it is 403', async () => {
    const client = asRegistered(await registerClient({ public: true }));
    const request = {
      clientId: client.client_id,
      redirectUri: CALLBACK,
      challenge: pkcePair().challenge,
    };
    const page = await getAuthorize(gateway.url, authorizeQuery(request), {
      cookie: payerMember.cookie!,
    });
    expect(page.status).toBe(200);
    const form = readConsentForm(page.text);
    expect(form.orgOptions).not.toContain(payer.org_id);
    const approval = await postDecision(
      payerMember,
      { ...form.fields, org_id: payer.org_id, decision: 'approve' },
      { accept: 'application/json' },
    );
    expect(approval.status).toBe(403);
    expect(approval.location).toBeNull();
    expect((JSON.parse(approval.text) as ErrorBody).error.code).toBe('gw_role_forbidden');
    const { rowCount } = await db.query(
      'SELECT 1 FROM app_connections WHERE oauth_client_id = $1',
      [client.client_id],
    );
    expect(rowCount).toBe(0);
  });

  it('removing the admin who approved, or demoting them below admin, revokes what they approved there at once; the rest keeps working', async () => {
    const owner = await signedInMember(payer.org_id, 'owner');
    const removed = await signedInMember(payer.org_id, 'admin');
    const toMember = await signedInMember(payer.org_id, 'admin');
    const toViewer = await signedInMember(payer.org_id, 'admin');
    const client = asRegistered(await registerClient({ public: true }));
    await runCliJson(
      ['wallet', 'topup', '--org-id', removed.personalOrgId, '--amount', '1.00'],
      env,
    );
    const connect = (who: DashboardClient, orgId = payer.org_id) =>
      connectAndExchange(gateway.url, who, client, { orgId });
    const [fromRemoved, personal, fromMember, fromViewer, others] = [
      await connect(removed.browser),
      await connect(removed.browser, removed.personalOrgId),
      await connect(toMember.browser),
      await connect(toViewer.browser),
      await connect(payerAdmin),
    ];
    for (const token of [fromRemoved, personal, fromMember, fromViewer, others]) {
      const works = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chat,
        bearer(token.access_token),
      );
      expect(works.status).toBe(200); // and now cached on this instance
    }

    const members = `/dashboard/api/orgs/${payer.org_id}/members`;
    const gone = await owner.browser.request('DELETE', `${members}/${removed.userId}`);
    expect(gone.status).toBe(200);
    const demoted = await owner.browser.request('PATCH', `${members}/${toMember.userId}`, {
      role: 'member',
    });
    expect(demoted.status).toBe(200);
    const viewer = await owner.browser.request('PATCH', `${members}/${toViewer.userId}`, {
      role: 'viewer',
    });
    expect(viewer.status).toBe(200);

    // at once: the answers above came after every instance's cache was told
    for (const token of [fromRemoved, fromMember, fromViewer]) {
      const refused = await postJson<ErrorBody>(
        `${gateway.url}/v1/chat/completions`,
        chat,
        bearer(token.access_token),
      );
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('gw_key_inactive');
    }
    // what they approved elsewhere (their own organization), and what others approved, stay
    for (const token of [personal, others]) {
      const works = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chat,
        bearer(token.access_token),
      );
      expect(works.status).toBe(200);
    }
    const { rows } = await db.query<{ id: string; connection: string; token: string }>(
      `SELECT c.id, c.status AS connection, k.status AS token
         FROM app_connections c JOIN api_keys k ON k.app_connection_id = c.id
        WHERE c.id = ANY($1)`,
      [
        [
          fromRemoved.app_connection_id,
          fromMember.app_connection_id,
          fromViewer.app_connection_id,
          personal.app_connection_id,
          others.app_connection_id,
        ],
      ],
    );
    const statusOf = (id: string) => rows.find((row) => row.id === id);
    for (const token of [fromRemoved, fromMember, fromViewer]) {
      expect(statusOf(token.app_connection_id)).toMatchObject({
        connection: 'revoked',
        token: 'revoked',
      });
    }
    for (const token of [personal, others]) {
      expect(statusOf(token.app_connection_id)).toMatchObject({
        connection: 'active',
        token: 'active',
      });
    }
    const listed = await owner.browser.get<{ data: ConnectedApp[] }>(
      `${connectedAppsOf(payer.org_id)}?limit=200`,
    );
    expect(listed.body.data.find((row) => row.id === fromRemoved.app_connection_id)?.status).toBe(
      'revoked',
    );
    // the audit log names who removed them
    const audit = await db.query<{ user_id: string }>(
      `SELECT user_id FROM dashboard_audit_log WHERE object_id = $1 AND action = 'connection.revoke'`,
      [fromRemoved.app_connection_id],
    );
    expect(audit.rows).toEqual([{ user_id: owner.userId }]);
  });

  it('a code approved by an admin who is removed before its exchange yields nothing', async () => {
    const owner = await signedInMember(payer.org_id, 'owner');
    const approver = await signedInMember(payer.org_id, 'admin');
    const client = asRegistered(await registerClient({ public: true }));
    const pkce = pkcePair();
    const answer = await connectWith(
      approver.browser,
      { clientId: client.client_id, redirectUri: CALLBACK, challenge: pkce.challenge },
      { orgId: payer.org_id },
    );
    const code = new URL(answer.location!).searchParams.get('code')!;
    const gone = await owner.browser.request(
      'DELETE',
      `/dashboard/api/orgs/${payer.org_id}/members/${approver.userId}`,
    );
    expect(gone.status).toBe(200);
    const token = await postForm<{ error: string; error_description: string }>(
      `${gateway.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        code_verifier: pkce.verifier,
        client_id: client.client_id,
      },
    );
    expect(token.status).toBe(400);
    expect(token.body).toMatchObject({
      error: 'invalid_grant',
      error_description:
        'the user who approved this code may no longer connect apps to that organization',
    });
    const { rowCount } = await db.query(
      'SELECT 1 FROM app_connections WHERE oauth_client_id = $1',
      [client.client_id],
    );
    expect(rowCount).toBe(0);
  });
});
