// A monthly spending cap set on the OAuth consent page (decision 415): the user approving an
// app may bound what it spends from the paying organization's wallet. The cap is the
// connection's app-connection cap, made in the transaction that makes the connection and its
// token, so the app's first request already meets it (403 gw_cap_exceeded); the paying
// organization's admins see it on the connected apps and change or clear it through the
// connection-cap routes every connection uses. Amounts are checked as every cap amount is;
// approving the same app again makes another connection with the cap of its own form; nobody
// sets a cap on another organization's connection. Real gateway, Redis and Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { whileRefusing } from './support/refusing-trigger.js';
import { createMember, signInTo, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  authorizeQuery,
  connect,
  connectAndExchange,
  createOAuthClient,
  getAuthorize,
  pkcePair,
  postForm,
  readConsentCap,
  readConsentForm,
  type RegisteredClient,
} from './support/oauth.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('oauth-cap', { ownDatabase: true });
let gateway: GatewayProcess;
let maker: SeededOrg;
let payer: SeededOrg;
let other: SeededOrg;
let payerAdmin: DashboardClient;
let payerMember: DashboardClient;
let otherAdmin: DashboardClient;
let client: RegisteredClient;

const CALLBACK = 'http://127.0.0.1:9/cb';

interface CapState {
  scope: string;
  org_id: string;
  app_connection_id: string | null;
  cap: { cap_rule_id: string; amount: string | null; currency: string; period: string } | null;
}
interface ConnectedApp {
  id: string;
  status: string;
  monthly_cap: string | null;
  currency: string;
}

const capPath = (connectionId: string) => `/dashboard/api/connections/${connectionId}/cap`;

async function member(orgId: string, role: string): Promise<DashboardClient> {
  const email = uniqueEmail(`cap-${role}`);
  await createMember(env, email, orgId, role);
  return signInTo(gateway, email);
}

function infer(token: string) {
  return postJson<ErrorBody>(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    bearer(token),
  );
}

/** The connection's active cap rule as Postgres holds it (nano-units), or null. */
async function storedCap(connectionId: string): Promise<{ nano: bigint; org_id: string } | null> {
  const { rows } = await db.query<{ amount: string; org_id: string }>(
    `SELECT amount::text, org_id FROM cap_rules
      WHERE scope = 'app_connection' AND app_connection_id = $1 AND status = 'active'`,
    [connectionId],
  );
  const row = rows[0];
  return row ? { nano: numericToNano(row.amount), org_id: row.org_id } : null;
}

async function connectedApp(viewer: DashboardClient, orgId: string, id: string) {
  const list = await viewer.get<{ data: ConnectedApp[] }>(
    `/dashboard/api/orgs/${orgId}/connected-apps`,
  );
  expect(list.status).toBe(200);
  return list.body.data.find((app) => app.id === id);
}

beforeAll(async () => {
  gateway = await startGateway(env);
  [maker, payer, other] = await Promise.all([
    seed(env, ['--name', 'Maker']),
    seed(env, ['--name', 'Payer', '--wallet', '20.00']),
    seed(env, ['--name', 'Other', '--wallet', '20.00']),
  ]);
  [payerAdmin, payerMember, otherAdmin] = await Promise.all([
    member(payer.org_id, 'admin'),
    member(payer.org_id, 'member'),
    member(other.org_id, 'admin'),
  ]);
  client = await createOAuthClient(env, maker.app_id, [CALLBACK], {
    public: true,
    name: 'Capped',
  });
});

afterAll(async () => {
  await gateway?.stop();
});

describe('a spending cap set on the consent page', () => {
  it("is the connection's cap from its first request: past it 403 gw_cap_exceeded; the dashboard API changes and clears it", async () => {
    // One nano-unit: less than any request costs.
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
      capAmount: '0.000000001',
    });
    const connectionId = token.app_connection_id;
    expect(await storedCap(connectionId)).toEqual({ nano: 1n, org_id: payer.org_id });
    const { rows: audit } = await db.query<{ action: string; user_id: string }>(
      `SELECT a.action, a.user_id FROM dashboard_audit_log a JOIN cap_rules r ON r.id = a.object_id
        WHERE r.app_connection_id = $1 ORDER BY a.id`,
      [connectionId],
    );
    expect(audit).toEqual([{ action: 'cap.set', user_id: expect.stringMatching(/^usr_/) }]);

    // The app's very first request meets the cap.
    const refused = await infer(token.access_token);
    expect(refused.status).toBe(403);
    // SPEC's shape: { error: { code, message } }, the message naming the cap
    expect(refused.body).toEqual({
      error: {
        code: 'gw_cap_exceeded',
        cap_scope: 'app_connection',
        message: expect.stringMatching(
          /^the app connection cap of 0\.000000001000 USD per month would be exceeded: 0\.000000000000 USD spent/,
        ),
      },
    });
    const { rows: spent } = await db.query(
      'SELECT count(*)::int AS n FROM usage_records WHERE app_connection_id = $1',
      [connectionId],
    );
    expect(spent).toEqual([{ n: 0 }]);
    expect(await connectedApp(payerMember, payer.org_id, connectionId)).toMatchObject({
      status: 'active',
      monthly_cap: '0.000000001000',
      currency: 'USD',
    });

    // An admin of the paying organization raises it: the app's next request passes.
    const raised = await payerAdmin.request<CapState>('PUT', capPath(connectionId), {
      amount: '5',
    });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({
      scope: 'app_connection',
      org_id: payer.org_id,
      app_connection_id: connectionId,
      cap: { amount: '5.000000000000', currency: 'USD', period: 'monthly' },
    });
    expect((await infer(token.access_token)).status).toBe(200);
    expect((await connectedApp(payerAdmin, payer.org_id, connectionId))?.monthly_cap).toBe(
      '5.000000000000',
    );

    // A member may stop the app, not change what it may spend (as any connection cap).
    const byMember = await payerMember.request<ErrorBody>('PUT', capPath(connectionId), {
      amount: '50',
    });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.code).toBe('gw_role_forbidden');
    // Amounts are checked as every cap's: a float-looking number is not an amount.
    const asNumber = await payerAdmin.request<ErrorBody>('PUT', capPath(connectionId), {
      amount: 5.5,
    });
    expect(asNumber.status).toBe(400);
    expect((await storedCap(connectionId))?.nano).toBe(5_000_000_000n);

    // Cleared: no cap, and the app goes on.
    const cleared = await payerAdmin.request<CapState>('DELETE', capPath(connectionId));
    expect(cleared.status).toBe(200);
    expect(cleared.body.cap).toBeNull();
    expect(await storedCap(connectionId)).toBeNull();
    expect((await connectedApp(payerAdmin, payer.org_id, connectionId))?.monthly_cap).toBeNull();
    expect((await infer(token.access_token)).status).toBe(200);
  });

  it('left empty, the connection has no cap', async () => {
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
      capAmount: '',
    });
    expect(await storedCap(token.app_connection_id)).toBeNull();
    expect(
      (await connectedApp(payerAdmin, payer.org_id, token.app_connection_id))?.monthly_cap,
    ).toBeNull();
    expect((await infer(token.access_token)).status).toBe(200);
  });

  it.each([
    ['ten', 400, 'gw_invalid_request'],
    ['-1', 400, 'gw_invalid_request'],
    ['1e3', 400, 'gw_invalid_request'],
    ['1,000', 400, 'gw_invalid_request'],
    ['$5', 400, 'gw_invalid_request'],
    ['0.0000000001', 400, 'gw_invalid_request'],
    ['1000001', 400, 'gw_amount_out_of_range'],
    ['9'.repeat(65), 400, 'gw_invalid_request'],
  ])(
    'refuses %j as a cap (%i %s): no code, and a browser gets the consent page back naming the problem',
    async (amount, status, code) => {
      const pkce = pkcePair();
      const request = {
        clientId: client.client_id,
        redirectUri: CALLBACK,
        state: 'st',
        challenge: pkce.challenge,
      };
      const page = await connect(payerAdmin, request, { orgId: payer.org_id, capAmount: amount });
      expect(page.status).toBe(status);
      expect(page.location).toBeNull();
      if (amount.length <= 64) {
        // the form again, with what the user typed and why it is refused
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(page.text).toContain('id="cap_problem"');
        expect(page.text).toContain('Monthly spending cap:');
        expect(readConsentCap(page.text)).toBe(amount);
        expect(readConsentForm(page.text).fields.csrf_token).toBe(payerAdmin.csrfToken);
      }
      const json = await connect(
        payerAdmin,
        request,
        { orgId: payer.org_id, capAmount: amount },
        { accept: 'application/json' },
      );
      expect(json.status).toBe(status);
      expect((JSON.parse(json.text) as ErrorBody).error.code).toBe(code);
      expect(json.location).toBeNull();
    },
  );

  it('takes the amount as the dashboard forms send it: trimmed, at most 12 decimals, 0 allowed', async () => {
    const padded = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
      capAmount: ' 12.50 ',
    });
    expect((await storedCap(padded.app_connection_id))?.nano).toBe(12_500_000_000n);
    const zero = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
      capAmount: '0',
    });
    expect((await storedCap(zero.app_connection_id))?.nano).toBe(0n);
    expect((await infer(zero.access_token)).body.error?.code).toBe('gw_cap_exceeded');
  });

  it('is one transaction with the connection and its token: a cap that cannot be written leaves no connection and no token', async () => {
    const appClient = await createOAuthClient(env, maker.app_id, [CALLBACK], {
      public: true,
      name: 'Atomic',
    });
    // Writing this cap fails (as a dropped database connection would).
    const trigger = `refuse_cap_${appClient.client_id.slice(-12).toLowerCase()}`;
    await whileRefusing(
      db,
      { name: trigger, table: 'cap_rules', before: 'INSERT', when: 'NEW.amount = 123.456' },
      async () => {
        const pkce = pkcePair();
        const answer = await connect(
          payerAdmin,
          {
            clientId: appClient.client_id,
            redirectUri: CALLBACK,
            state: 'a',
            challenge: pkce.challenge,
          },
          { orgId: payer.org_id, capAmount: '123.456' },
        );
        const code = new URL(answer.location!).searchParams.get('code')!;
        const token = await postForm(`${gateway.url}/oauth/token`, {
          grant_type: 'authorization_code',
          code,
          redirect_uri: CALLBACK,
          code_verifier: pkce.verifier,
          client_id: appClient.client_id,
        });
        expect(token.status).toBe(500);
        expect(token.body).not.toHaveProperty('access_token');
        const { rows } = await db.query(
          `SELECT (SELECT count(*)::int FROM app_connections WHERE oauth_client_id = $1) AS connections,
                  (SELECT count(*)::int FROM api_keys k JOIN app_connections c ON c.id = k.app_connection_id
                    WHERE c.oauth_client_id = $1) AS tokens`,
          [appClient.client_id],
        );
        expect(rows).toEqual([{ connections: 0, tokens: 0 }]);
      },
    );
  });

  it('denying with a cap typed connects nothing', async () => {
    const before = await db.query('SELECT count(*)::int AS n FROM cap_rules');
    const answer = await connect(
      payerAdmin,
      {
        clientId: client.client_id,
        redirectUri: CALLBACK,
        state: 'd',
        challenge: pkcePair().challenge,
      },
      { orgId: payer.org_id, capAmount: '3', decision: 'deny' },
    );
    expect(answer.status).toBe(302);
    expect(new URL(answer.location!).searchParams.get('error')).toBe('access_denied');
    expect((await db.query('SELECT count(*)::int AS n FROM cap_rules')).rows).toEqual(before.rows);
  });
});

describe('approving the same app again', () => {
  it('shows where it is connected and starts from its cap; the new connection takes its own form’s cap, the old keeps its own', async () => {
    const appClient = await createOAuthClient(env, maker.app_id, [CALLBACK], {
      public: true,
      name: 'Again',
    });
    const first = await connectAndExchange(gateway.url, payerAdmin, appClient, {
      orgId: payer.org_id,
      capAmount: '7',
    });
    const query = authorizeQuery({
      clientId: appClient.client_id,
      redirectUri: CALLBACK,
      state: 'again',
      challenge: pkcePair().challenge,
    });
    const page = await getAuthorize(gateway.url, query, { cookie: payerAdmin.cookie! });
    expect(page.status).toBe(200);
    // The payer is the admin's only organization that can pay (their personal one is first).
    const form = readConsentForm(page.text);
    expect(form.orgOptions).toContain(payer.org_id);
    expect(page.text).toContain('id="already_connected"');
    expect(page.text).toContain('Payer: a cap of 7 USD a month');

    const second = await connectAndExchange(gateway.url, payerAdmin, appClient, {
      orgId: payer.org_id,
      capAmount: '3',
    });
    expect(second.app_connection_id).not.toBe(first.app_connection_id);
    expect((await storedCap(second.app_connection_id))?.nano).toBe(3_000_000_000n);
    expect((await storedCap(first.app_connection_id))?.nano).toBe(7_000_000_000n);
    // both listed, each with its cap
    expect(
      (await connectedApp(payerAdmin, payer.org_id, first.app_connection_id))?.monthly_cap,
    ).toBe('7.000000000000');
    expect(
      (await connectedApp(payerAdmin, payer.org_id, second.app_connection_id))?.monthly_cap,
    ).toBe('3.000000000000');
  });

  it('prefills the cap of the connection in the organization chosen by default', async () => {
    const appClient = await createOAuthClient(env, maker.app_id, [CALLBACK], {
      public: true,
      name: 'Prefill',
    });
    const query = () =>
      authorizeQuery({
        clientId: appClient.client_id,
        redirectUri: CALLBACK,
        state: 'p',
        challenge: pkcePair().challenge,
      });
    const fresh = await getAuthorize(gateway.url, query(), { cookie: otherAdmin.cookie! });
    expect(readConsentCap(fresh.text)).toBe('');
    expect(fresh.text).not.toContain('id="already_connected"');
    const defaultOrg = readConsentForm(fresh.text).orgOptions[0]!;
    await connectAndExchange(gateway.url, otherAdmin, appClient, {
      orgId: defaultOrg,
      capAmount: '2.5',
    });
    const again = await getAuthorize(gateway.url, query(), { cookie: otherAdmin.cookie! });
    expect(readConsentCap(again.text)).toBe('2.5');
  });
});

describe('an app connected many times', () => {
  it('still carries the cap of its newest connection in each organization, however many are newer elsewhere (decision 446)', async () => {
    const appClient = await createOAuthClient(env, maker.app_id, [CALLBACK], {
      public: true,
      name: 'Reconnecting',
    });
    const user = await member(payer.org_id, 'admin');
    await connectAndExchange(gateway.url, user, appClient, { orgId: payer.org_id, capAmount: '7' });
    // an app that runs the flow at each sign-in: 20 connections since, in the personal one
    const query = () =>
      authorizeQuery({
        clientId: appClient.client_id,
        redirectUri: CALLBACK,
        state: 'many',
        challenge: pkcePair().challenge,
      });
    const personal = readConsentForm(
      (await getAuthorize(gateway.url, query(), { cookie: user.cookie! })).text,
    ).orgOptions[0]!;
    expect(personal).not.toBe(payer.org_id);
    for (let made = 0; made < 20; made += 1) {
      await connectAndExchange(gateway.url, user, appClient, { orgId: personal });
    }
    const page = await getAuthorize(gateway.url, query(), { cookie: user.cookie! });
    expect(page.status).toBe(200);
    expect(readConsentCap(page.text)).toBe('');
    expect(page.text).toContain(`<option value="${payer.org_id}" data-cap="7"`);
    expect(page.text).toContain('<li>Payer: a cap of 7 USD a month</li>');
  });
});

describe('across tenants', () => {
  it("an admin of another organization can neither read, set nor clear a connected app's cap", async () => {
    const token = await connectAndExchange(gateway.url, payerAdmin, client, {
      orgId: payer.org_id,
      capAmount: '4',
    });
    const path = capPath(token.app_connection_id);
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', { amount: '1000' }],
      ['DELETE', undefined],
    ] as const) {
      const answer = await otherAdmin.request<ErrorBody>(method, path, body);
      expect([method, answer.status, answer.body.error.code]).toEqual([
        method,
        404,
        'gw_not_found',
      ]);
    }
    expect(await storedCap(token.app_connection_id)).toEqual({
      nano: 4_000_000_000n,
      org_id: payer.org_id,
    });
    // nor list it, nor make a connection (with a cap) in an organization not theirs
    const listed = await otherAdmin.get<ErrorBody>(
      `/dashboard/api/orgs/${payer.org_id}/connected-apps`,
    );
    expect(listed.status).toBe(404);
    const foreign = await connect(
      otherAdmin,
      {
        clientId: client.client_id,
        redirectUri: CALLBACK,
        state: 'x',
        challenge: pkcePair().challenge,
      },
      { orgId: payer.org_id, capAmount: '1000' },
      { accept: 'application/json' },
    );
    expect(foreign.status).toBe(404);
    expect((JSON.parse(foreign.text) as ErrorBody).error.code).toBe('gw_not_found');
    expect(foreign.location).toBeNull();
  });
});
