// Every webhook event kind, end to end: the cause happens through the real API, CLI or
// inference path; a local receiver verifies each signature with `standardwebhooks` and gets
// each event exactly once, with the object in the shape the API returns it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { formatNano, numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, postSse } from './support/http.js';
import {
  type GatewayProcess,
  runCliJson,
  seed,
  type SeededOrg,
  setProductUserCap,
  startGateway,
} from './support/processes.js';
import { eventually } from './support/services.js';
import { TEST_MASTER_KEY } from './support/env.js';
import { createMember, signInTo, uniqueEmail } from './support/dashboard.js';
import { connectAndExchange, createOAuthClient, postForm } from './support/oauth.js';
import { WebhookReceiver, webhookEnv, type ReceivedMessage } from './support/webhook-receiver.js';

const { prefix, db, redis } = isolatedContext('wh-events');
const env = webhookEnv(prefix);
const receiver = new WebhookReceiver();
let gateway: GatewayProcess;
let org: SeededOrg;
/** The org's catch-all endpoint's path on the receiver. */
const ALL = '/all';
/** The sell cost of one `chat()` request (deterministic with the mock vendor). */
let unitNano: bigint;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function addEndpoint(orgId: string, path: string, events?: string): Promise<string> {
  const added = await runCliJson<{ id: string; secret: string }>(
    [
      'webhook',
      'add',
      '--org-id',
      orgId,
      '--url',
      receiver.endpoint(path),
      ...(events ? ['--events', events] : []),
    ],
    env,
  );
  // the endpoint as the dashboard API answers it, with its secret
  expect(added).toMatchObject({ id: expect.any(String), url: receiver.endpoint(path) });
  expect(added.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  receiver.setSecrets(path, [added.secret]);
  return added.id;
}

function chat(apiKey: string, user: string) {
  return postJson<Record<string, unknown>>(
    `${gateway.url}/v1/chat/completions`,
    {
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: 'hello there' }],
      max_tokens: 16,
    },
    { ...bearer(apiKey), 'x-gw-external-user-id': user },
  );
}

/** The same request, streamed (its usage comes from the stream). */
async function streamedChat(apiKey: string, user: string): Promise<number> {
  const answer = await postSse(
    `${gateway.url}/v1/chat/completions`,
    {
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: 'hello there' }],
      max_tokens: 16,
      stream: true,
    },
    { ...bearer(apiKey), 'x-gw-external-user-id': user },
  );
  return answer.status;
}

/**
 * The `count` messages of `type` that `path` expects, once they came, and `settled`: no more of
 * them arrive there for a while after (0.7 s). A test may do what sends nothing more of the type
 * there meanwhile (the next step, or another wait), and awaits `settled` after it.
 */
async function arrival(
  path: string,
  type: string,
  count: number,
): Promise<{ found: ReceivedMessage[]; settled: Promise<ReceivedMessage[]> }> {
  const found = await receiver.waitFor(path, type, count);
  const settled = new Promise((resolve) => setTimeout(resolve, 700)).then(() => {
    const all = receiver.ofType(path, type);
    expect(all.map((message) => message.id)).toEqual(found.map((message) => message.id));
    return all;
  });
  settled.catch(() => undefined); // awaited by the test, after what it does meanwhile
  return { found, settled };
}

/** No more messages of `type` arrive at `path` for a while (after the ones expected). */
async function settles(path: string, type: string, count: number): Promise<ReceivedMessage[]> {
  return (await arrival(path, type, count)).settled;
}

beforeAll(async () => {
  await receiver.start();
  gateway = await startGateway(env);
  org = await seed(env, ['--wallet', '50.00']);
  await addEndpoint(org.org_id, ALL);
  // One request of a user without a cap: what every such request costs.
  const calibration = await chat(org.api_key, 'calibration');
  expect(calibration.status).toBe(200);
  const row = await eventually(async () => {
    const { rows } = await db.query<{ sell_cost: string }>(
      'SELECT sell_cost::text FROM usage_records WHERE org_id = $1 AND request_id = $2::uuid',
      [org.org_id, calibration.headers.get('x-request-id')],
    );
    return rows[0];
  });
  unitNano = numericToNano(row.sell_cost);
  expect(unitNano).toBeGreaterThan(0n);
});

afterAll(async () => {
  await gateway?.stop();
  await db.query('DELETE FROM webhook_endpoints WHERE url LIKE $1', [`${receiver.url}%`]);
  await receiver.stop();
});

afterAll(() => {
  // Every message any endpoint got carried a signature its secret verified.
  expect(receiver.unverified).toEqual([]);
});

describe('product users', () => {
  it('product_user.created once, from the management API, with the profile fields', async () => {
    const put = await fetch(`${gateway.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'api-user',
        display_name: 'Ada',
      }),
    });
    expect(put.status).toBe(201);
    const profile = (await put.json()) as Record<string, unknown>;
    // An update is not a creation.
    const again = await fetch(`${gateway.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
      body: JSON.stringify({ app_id: org.app_id, external_user_id: 'api-user', display_name: 'B' }),
    });
    expect(again.status).toBe(200);
    const created = (await settles(ALL, 'product_user.created', 2)).filter(
      (message) => message.payload.data.external_user_id === 'api-user',
    );
    expect(created).toHaveLength(1);
    const { payload } = created[0]!;
    expect(payload.timestamp).toMatch(ISO);
    expect(payload.data).toEqual({
      product_end_user_id: profile.product_end_user_id,
      org_id: org.org_id,
      app_id: org.app_id,
      external_user_id: 'api-user',
      display_name: 'Ada',
      email_hash: '',
      status: 'active',
      metadata: {},
      allowance_starts_at: null,
      last_app_connection_id: '',
    });
    // The calibration user came first (first sight on the inference path).
    expect(
      receiver
        .ofType(ALL, 'product_user.created')
        .map((message) => message.payload.data.external_user_id),
    ).toContain('calibration');
  });

  it('product_user.created once on first sight, however many first requests race', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => chat(org.api_key, 'first-sight')),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    await eventually(async () =>
      receiver
        .ofType(ALL, 'product_user.created')
        .some((message) => message.payload.data.external_user_id === 'first-sight')
        ? true
        : undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 700));
    const sightings = receiver
      .ofType(ALL, 'product_user.created')
      .filter((message) => message.payload.data.external_user_id === 'first-sight');
    expect(sightings).toHaveLength(1);
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM product_users WHERE app_id = $1 AND external_user_id = $2',
      [org.app_id, 'first-sight'],
    );
    expect(sightings[0]!.payload.data).toMatchObject({
      product_end_user_id: rows[0]!.id,
      status: 'active',
      last_app_connection_id: org.app_connection_id,
    });
  });

  it('product_user.blocked and .unblocked once per change, not for a repeat', async () => {
    const block = ['product-user', 'block', '--app-id', org.app_id, '--external-user-id', 'bob'];
    await runCliJson(block, env);
    await runCliJson(block, env); // already blocked: no second event
    await runCliJson(
      ['product-user', 'unblock', '--app-id', org.app_id, '--external-user-id', 'bob'],
      env,
    );
    const [blocked, unblocked] = await Promise.all([
      settles(ALL, 'product_user.blocked', 1),
      settles(ALL, 'product_user.unblocked', 1),
    ]);
    expect(blocked[0]!.payload.data).toMatchObject({ external_user_id: 'bob', status: 'blocked' });
    expect(unblocked[0]!.payload.data).toMatchObject({ external_user_id: 'bob', status: 'active' });
    expect(blocked[0]!.receivedAtMs).toBeLessThanOrEqual(unblocked[0]!.receivedAtMs);
  });
});

describe('credit grants', () => {
  it('credit_grant.created once (an Idempotency-Key replay is not a grant), .revoked once', async () => {
    const body = {
      app_id: org.app_id,
      external_user_id: 'granted',
      amount: '2.50',
      reason: 'promo',
    };
    const headers = { ...bearer(org.service_key), 'idempotency-key': 'grant-once' };
    const url = `${gateway.url}/product-users/by-external-id/credit-grants`;
    // The user exists first (the grant route never creates one).
    await runCliJson(
      ['product-user', 'unblock', '--app-id', org.app_id, '--external-user-id', 'granted'],
      env,
    );
    const first = await postJson<Record<string, unknown>>(url, body, headers);
    expect(first.status).toBe(201);
    expect((await postJson(url, body, headers)).status).toBe(200);
    const creation = await arrival(ALL, 'credit_grant.created', 1);
    const { credits: _credits, ...grant } = first.body;
    expect(creation.found[0]!.payload.data).toEqual(grant);

    await runCliJson(['credits', 'revoke', '--grant-id', String(grant.grant_id)], env);
    const [[revoked]] = await Promise.all([
      settles(ALL, 'credit_grant.revoked', 1),
      creation.settled,
    ]);
    expect(revoked!.payload.data).toEqual({ ...grant, status: 'revoked' });
  });

  it('credit_grant.expired once, when the grant expires', async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const granted = await runCliJson<Record<string, unknown>>(
      [
        'credits',
        'grant',
        '--app-id',
        org.app_id,
        '--external-user-id',
        'expiring',
        '--amount',
        '1.00',
        '--expires-at',
        expiresAt,
      ],
      env,
    );
    const [expired] = await settles(ALL, 'credit_grant.expired', 1);
    // the CLI prints the grant as the API answers it, with the user's credits; the event's
    // data is the grant
    const { credits: _credits, ...grant } = granted;
    expect(expired!.payload.data).toEqual(grant);
    expect(expired!.payload.timestamp).toBe(granted.expires_at);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
  });
});

describe('API keys', () => {
  it('api_key.created and .revoked once each, never with the raw key', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      ['api-key', 'create', '--app-connection-id', org.app_connection_id, '--name', 'hooked'],
      env,
    );
    await runCliJson(['api-key', 'revoke', '--id', created.id], env);
    await runCliJson(['api-key', 'revoke', '--id', created.id], env); // nothing left to revoke
    const [issuedOnes, revokedOnes] = await Promise.all([
      settles(ALL, 'api_key.created', 1),
      settles(ALL, 'api_key.revoked', 1),
    ]);
    const [issued] = issuedOnes.filter((message) => message.payload.data.id === created.id);
    const revoked = revokedOnes.filter((message) => message.payload.data.id === created.id);
    expect(revoked).toHaveLength(1);
    expect(issued!.payload.data).toMatchObject({
      id: created.id,
      org_id: org.org_id,
      app_connection_id: org.app_connection_id,
      name: 'hooked',
      status: 'active',
      key_hint: `${created.key.slice(0, 10)}…`,
    });
    expect(revoked[0]!.payload.data).toMatchObject({ id: created.id, status: 'revoked' });
    for (const message of receiver.received) expect(message.body).not.toContain(created.key);
  });
});

describe('API key limits', () => {
  it('api_key.updated once per change of the limits, written with the change and its audit entry; not for the same limits, a refused change, or an admin of another organization', async () => {
    const adminEmail = uniqueEmail('wh-key-admin');
    await createMember(env, adminEmail, org.org_id, 'admin');
    const admin = await signInTo(gateway, adminEmail);
    const stranger = await seed(env);
    await addEndpoint(stranger.org_id, '/stranger');
    const strangerEmail = uniqueEmail('wh-key-stranger');
    await createMember(env, strangerEmail, stranger.org_id, 'admin');
    const outsider = await signInTo(gateway, strangerEmail);
    const created = await runCliJson<{ id: string; key: string }>(
      ['api-key', 'create', '--app-connection-id', org.app_connection_id, '--name', 'limited'],
      env,
    );
    const path = `/dashboard/api/api-keys/${created.id}`;
    /** The api_key.updated rows of the key: each message, its deliveries, its audit twin. */
    const written = async () =>
      (
        await db.query<{ org_id: string; deliveries: number; audited: number }>(
          `SELECT m.org_id,
                  (SELECT count(*)::int FROM webhook_deliveries d WHERE d.message_id = m.id) AS deliveries,
                  (SELECT count(*)::int FROM dashboard_audit_log a
                    WHERE a.object_id = $1 AND a.action = 'api_key.update'
                      AND a.created_at = m.created_at) AS audited
             FROM webhook_messages m
            WHERE m.event_type = 'api_key.updated' AND m.payload::jsonb -> 'data' ->> 'id' = $1
            ORDER BY m.seq`,
          [created.id],
        )
      ).rows;

    const limited = await admin.request<Record<string, unknown>>('PATCH', path, {
      requests_per_minute: 60,
    });
    expect(limited.status).toBe(200);
    // One message, delivered to the org's one endpoint, stamped with the time of the
    // transaction that wrote the audit entry (now() is the transaction's start).
    expect(await written()).toEqual([{ org_id: org.org_id, deliveries: 1, audited: 1 }]);
    // The same limits again: audited, but nothing changed to announce.
    const same = await admin.request('PATCH', path, { requests_per_minute: 60 });
    expect(same.status).toBe(200);
    const cli = await runCliJson(
      ['api-key', 'update', '--id', created.id, '--product-user-requests-per-minute', '5'],
      env,
    );
    expect(cli).toMatchObject({
      id: created.id,
      requests_per_minute: 60,
      product_user_requests_per_minute: 5,
    });
    // Another organization's admin: not found, nothing written for either organization.
    const foreign = await outsider.request<{ error: { code: string } }>('PATCH', path, {
      requests_per_minute: null,
    });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'gw_not_found']);
    // A revoked key: refused, nothing written.
    await runCliJson(['api-key', 'revoke', '--id', created.id], env);
    const refused = await admin.request<{ error: { code: string } }>('PATCH', path, {
      requests_per_minute: 1,
    });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'gw_conflict']);

    const updated = (await settles(ALL, 'api_key.updated', 2)).filter(
      (message) => message.payload.data.id === created.id,
    );
    expect(updated.map((message) => message.payload.data)).toEqual([
      limited.body,
      { ...limited.body, product_user_requests_per_minute: 5 },
    ]);
    expect(limited.body).toMatchObject({
      id: created.id,
      org_id: org.org_id,
      kind: 'api_key',
      status: 'active',
      requests_per_minute: 60,
      product_user_requests_per_minute: null,
    });
    expect(await written()).toEqual([
      { org_id: org.org_id, deliveries: 1, audited: 1 },
      { org_id: org.org_id, deliveries: 1, audited: 1 },
    ]);
    // The revocation's event carries the limits the key kept.
    const revoked = await eventually(async () =>
      receiver
        .ofType(ALL, 'api_key.revoked')
        .find((message) => message.payload.data.id === created.id),
    );
    expect(revoked.payload.data).toMatchObject({
      status: 'revoked',
      requests_per_minute: 60,
      product_user_requests_per_minute: 5,
    });
    expect(receiver.messages('/stranger')).toEqual([]);
    for (const message of receiver.received) expect(message.body).not.toContain(created.key);
  });
});

describe('spend', () => {
  it('product_user.allowance_threshold at 0.8 and 1.0 of the cap, once each, with the allowance', async () => {
    await setProductUserCap(env, org.app_id, 'capped', formatNano(unitNano * 5n));
    for (let index = 0; index < 6; index += 1) await chat(org.api_key, 'capped');
    const marks = await settles(ALL, 'product_user.allowance_threshold', 2);
    expect(marks.map((message) => message.payload.data.threshold)).toEqual([0.8, 1]);
    const [eighty, full] = marks;
    expect(eighty!.payload.data).toMatchObject({
      external_user_id: 'capped',
      app_id: org.app_id,
      allowance: {
        currency: 'USD',
        period: 'monthly',
        cap_amount: formatNano(unitNano * 5n),
        spent_this_period: formatNano(unitNano * 4n),
        remaining_base_allowance: formatNano(unitNano),
      },
    });
    expect(full!.payload.data).toMatchObject({
      allowance: {
        spent_this_period: formatNano(unitNano * 5n),
        remaining_base_allowance: formatNano(0n),
      },
    });
    const { period_start: start, period_end: end } = full!.payload.data.allowance as {
      period_start: string;
      period_end: string;
    };
    expect(start).toMatch(ISO);
    expect(Date.parse(end)).toBeGreaterThan(Date.parse(start));
  });

  it('cap.threshold for the org and connection caps, and wallet.low_balance once', async () => {
    const other = await seed(env, ['--wallet', formatNano(unitNano * 10n)]);
    await addEndpoint(other.org_id, '/spend');
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'org',
        '--org-id',
        other.org_id,
        '--amount',
        formatNano(unitNano * 5n),
      ],
      env,
    );
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        other.app_connection_id,
        '--amount',
        formatNano(unitNano * 4n),
      ],
      env,
    );
    const alert = await runCliJson<Record<string, unknown>>(
      [
        'wallet',
        'alert',
        '--org-id',
        other.org_id,
        '--low-balance-threshold',
        formatNano((unitNano * 15n) / 2n),
      ],
      env,
    );
    expect(alert).toEqual({
      org_id: other.org_id,
      low_balance_threshold: formatNano((unitNano * 15n) / 2n),
      currency: 'USD',
    });
    const statuses: number[] = [];
    for (let index = 0; index < 6; index += 1) {
      statuses.push(
        index % 2 === 1
          ? await streamedChat(other.api_key, `spender-${index}`)
          : (await chat(other.api_key, `spender-${index}`)).status,
      );
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    const [caps, [low]] = await Promise.all([
      settles('/spend', 'cap.threshold', 3),
      settles('/spend', 'wallet.low_balance', 1),
    ]);
    const summary = caps.map((message) => [
      message.payload.data.scope,
      message.payload.data.threshold,
    ]);
    expect(summary.sort()).toEqual([
      ['app_connection', 0.8],
      ['app_connection', 1],
      ['org', 0.8],
    ]);
    const connectionFull = caps.find(
      (message) =>
        message.payload.data.scope === 'app_connection' && message.payload.data.threshold === 1,
    )!;
    expect(connectionFull.payload.data).toMatchObject({
      org_id: other.org_id,
      app_connection_id: other.app_connection_id,
      amount: formatNano(unitNano * 4n),
      spent_this_period: formatNano(unitNano * 4n),
      currency: 'USD',
      period: 'monthly',
      status: 'active',
    });
    expect(connectionFull.payload.data.cap_rule_id).toMatch(/^cap_/);
    expect(low!.payload.data).toEqual({
      org_id: other.org_id,
      balance: formatNano(unitNano * 7n),
      currency: 'USD',
      low_balance_threshold: formatNano((unitNano * 15n) / 2n),
    });
    // Nothing of another organization reached this endpoint.
    for (const message of receiver.messages('/spend')) {
      expect(JSON.stringify(message.payload.data)).not.toContain(org.org_id);
    }
  });
});

describe('provider credentials', () => {
  it('provider_credential.failed_over once per cooldown, .rejected when the vendor refuses the key', async () => {
    const byok = await seed(env);
    await addEndpoint(byok.org_id, '/byok');
    const add = (name: string, secret: string, priority: string) =>
      runCliJson<{ id: string; fingerprint: string }>(
        [
          'credentials',
          'add',
          '--org-id',
          byok.org_id,
          '--provider',
          'vendor_b',
          '--name',
          name,
          '--secret-stdin',
          '--priority',
          priority,
          '--app-connection-id',
          byok.app_connection_id,
        ],
        env,
        { stdin: secret },
      );
    const limited = await add('limited', 'mock-429-limited', '1');
    const answers = await Promise.all([1, 2, 3].map(() => chat(byok.api_key, 'byok-user')));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    const [failedOver] = await settles('/byok', 'provider_credential.failed_over', 1);
    expect(failedOver!.payload.data).toMatchObject({
      id: limited.id,
      org_id: byok.org_id,
      provider: 'vendor_b',
      name: 'limited',
      fingerprint: limited.fingerprint,
      upstream_status: 429,
    });
    // The cooldown runs past the event (compared with the event's own time, not with when the
    // webhook arrived: on a loaded machine delivery can outlast a short cooldown).
    expect(Date.parse(String(failedOver!.payload.data.cooldown_until))).toBeGreaterThan(
      Date.parse(String(failedOver!.payload.timestamp)),
    );
    expect(failedOver!.body).not.toContain('mock-429-limited');

    // A key the vendor took at creation and refuses now (revoked at the vendor).
    await runCliJson(['credentials', 'disable', '--id', limited.id], env);
    const refused = await add('refused', 'mock-ok-for-now', '1');
    const box = parseMasterKeys(TEST_MASTER_KEY, 'test-k1', undefined)!;
    const sealed = box.seal('mock-bad-revoked');
    await db.query(
      'UPDATE provider_credentials SET key_id = $2, iv = $3, ciphertext = $4, auth_tag = $5 WHERE id = $1',
      [refused.id, sealed.keyId, sealed.iv, sealed.ciphertext, sealed.authTag],
    );
    await redis.publish(`${prefix}:invalidate`, 'credentials');
    // The gateway reads the credentials again once the invalidation arrives; until then it
    // serves with the secret it had, which the vendor takes. Once it has, the vendor refuses
    // the key and the request goes on gw's own route.
    await eventually(async () => {
      const answer = await chat(byok.api_key, 'byok-user');
      expect(answer.status).toBe(200);
      const requestId = answer.headers.get('x-request-id');
      const route = await eventually(async () => {
        const { rows } = await db.query<{ route: string }>(
          'SELECT route FROM usage_records WHERE request_id = $1',
          [requestId],
        );
        return rows[0]?.route;
      });
      return route === 'byok' ? undefined : true;
    }, 20_000);
    const [rejected] = await settles('/byok', 'provider_credential.rejected', 1);
    expect(rejected!.payload.data).toMatchObject({
      id: refused.id,
      name: 'refused',
      upstream_status: 401,
    });
  });
});

describe('OAuth connections', () => {
  it('oauth_connection.created when a user connects an app, .revoked when the app lets go', async () => {
    const payer = await seed(env);
    await addEndpoint(payer.org_id, '/oauth');
    const email = uniqueEmail('wh-oauth');
    await createMember(env, email, payer.org_id, 'owner');
    const user = await signInTo(gateway, email);
    const client = await createOAuthClient(env, org.app_id, ['http://127.0.0.1:9/callback'], {
      public: true,
      name: 'Hooked app',
    });
    const token = await connectAndExchange(gateway.url, user, client, { orgId: payer.org_id });
    const connection = await arrival('/oauth', 'oauth_connection.created', 1);
    expect(connection.found[0]!.payload.data).toMatchObject({
      id: token.app_connection_id,
      org_id: payer.org_id,
      app_id: org.app_id,
      oauth_client_id: client.client_id,
      client_name: 'Hooked app',
      status: 'active',
      connected_by: email,
      revoked_at: null,
    });
    const revoked = await postForm(`${gateway.url}/oauth/revoke`, {
      token: token.access_token,
      client_id: client.client_id,
    });
    expect(revoked.status).toBe(200);
    const [[gone]] = await Promise.all([
      settles('/oauth', 'oauth_connection.revoked', 1),
      connection.settled,
    ]);
    expect(gone!.payload.data).toMatchObject({ id: token.app_connection_id, status: 'revoked' });
    expect(Date.parse(String(gone!.payload.data.revoked_at))).toBeGreaterThan(0);
    expect(Date.parse(String(gone!.payload.data.token_issued_at))).toBeGreaterThan(0);
    expect(gone!.body).not.toContain(token.access_token);
  });
});

describe('endpoints', () => {
  it('an event filter limits what an endpoint gets; webhook.test reaches it anyway', async () => {
    const filtered = await addEndpoint(org.org_id, '/filtered', 'api_key.created');
    await runCliJson(
      ['product-user', 'block', '--app-id', org.app_id, '--external-user-id', 'filtered-out'],
      env,
    );
    const key = await runCliJson<{ id: string }>(
      ['api-key', 'create', '--app-connection-id', org.app_connection_id],
      env,
    );
    const test = await runCliJson<{ message_id: string }>(
      ['webhook', 'test', '--id', filtered],
      env,
    );
    const [sent] = await receiver.waitFor('/filtered', 'webhook.test');
    expect(sent!.id).toBe(test.message_id);
    expect(sent!.payload.data).toMatchObject({
      id: filtered,
      org_id: org.org_id,
      status: 'enabled',
    });
    const [issued] = await receiver.waitFor('/filtered', 'api_key.created');
    expect(issued!.payload.data.id).toBe(key.id);
    await receiver.waitFor(ALL, 'product_user.blocked', 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(
      receiver
        .messages('/filtered')
        .map((message) => message.payload.type)
        .sort(),
    ).toEqual(['api_key.created', 'webhook.test']);
  });
});
