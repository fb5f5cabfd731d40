// Revoking an OAuth connection reaches every gateway instance at once, however it is
// revoked — the app (POST /oauth/revoke), the user (connected apps in the dashboard), the
// app's maker (deleting the OAuth client), the payer's owner (removing the admin who
// approved it) — while a request admitted before the revocation
// settles normally and is charged to the paying wallet. Two gateways share Redis and
// Postgres; their key caches are long-lived (ten minutes), so only the pub/sub invalidation can
// do it: each instance is asked until it refuses, which must come long before the cache would
// let it go (a wall-clock second would measure the machine's load, not the invalidation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numericToNano } from '../src/money.js';
import { createRedisKeys } from '../src/redis/keys.js';
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
  connectAndExchange,
  createOAuthClient,
  postForm,
  type RegisteredClient,
} from './support/oauth.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually, firstChangedAnswer } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('oauth-revoke');
const keys = createRedisKeys(prefix);
let first: GatewayProcess;
let second: GatewayProcess;
let maker: SeededOrg;
let client: RegisteredClient;
let browser: DashboardClient;
let payerOrgId: string;

const CALLBACK = 'http://127.0.0.1:9/done';

async function infer(
  gateway: GatewayProcess,
  token: string,
  content = 'hi',
): Promise<[number, string | undefined]> {
  const answer = await postJson<ErrorBody>(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 16 },
    bearer(token),
  );
  return [answer.status, answer.body.error?.code];
}

/** Long for an invalidation on a loaded machine, short beside AUTH_CACHE_TTL_MS (10 min). */
const REFUSED_WITHIN_MS = 20_000;

/**
 * Asks `gateway` until it refuses the token (served until the invalidation arrives); fails if
 * it is still served after REFUSED_WITHIN_MS, a fraction of the cache's ten minutes.
 */
async function expectRefused(gateway: GatewayProcess, token: string): Promise<void> {
  const refused = await firstChangedAnswer(
    () => infer(gateway, token),
    ([status]) => status === 200,
    REFUSED_WITHIN_MS,
  );
  expect(refused).toEqual([401, 'gw_key_inactive']);
}

async function connected(
  by: DashboardClient = browser,
  orgId: string = payerOrgId,
): Promise<string> {
  const token = await connectAndExchange(first.url, by, client, { orgId });
  // Both instances have the token's identity cached (for AUTH_CACHE_TTL_MS, ten minutes here).
  for (const gateway of [first, second])
    expect(await infer(gateway, token.access_token)).toEqual([200, undefined]);
  return token.access_token;
}

beforeAll(async () => {
  const cached = { ...env, AUTH_CACHE_TTL_MS: '600000' };
  [first, second] = await Promise.all([startGateway(cached), startGateway(cached)]);
  maker = await seed(env, ['--name', 'Maker']);
  client = await createOAuthClient(env, maker.app_id, [CALLBACK], { public: true });
  const email = uniqueEmail('payer');
  const user = await runCliJson<{ personal_org_id: string }>(
    ['admin', 'create-user', '--email', email, '--password-stdin'],
    env,
    { stdin: TEST_PASSWORD },
  );
  payerOrgId = user.personal_org_id;
  await runCliJson(['wallet', 'topup', '--org-id', payerOrgId, '--amount', '5.00'], env);
  browser = await signInTo(first, email);
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

describe('revocation reaches every instance at once', () => {
  it('POST /oauth/revoke on one instance: the other refuses the token at once', async () => {
    const token = await connected();
    const revoked = await postForm<{ revoked: boolean }>(`${first.url}/oauth/revoke`, {
      token,
      client_id: client.client_id,
    });
    expect(revoked.body).toEqual({ revoked: true });
    await expectRefused(second, token);
    expect(await infer(first, token)).toEqual([401, 'gw_key_inactive']);
  });

  it('the user revokes the connected app in the dashboard: both instances refuse it at once', async () => {
    const token = await connected();
    const { rows } = await db.query<{ app_connection_id: string }>(
      `SELECT app_connection_id FROM api_keys WHERE key_hash = encode(sha256($1::bytea), 'hex')`,
      [token],
    );
    const revoked = await browser.post<{ status: string }>(
      `/dashboard/api/connected-apps/${rows[0]!.app_connection_id}/revoke`,
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    await expectRefused(second, token);
    await expectRefused(first, token);
    // and the app learns it is gone: revoking again says false
    const again = await postForm<{ revoked: boolean }>(`${second.url}/oauth/revoke`, {
      token,
      client_id: client.client_id,
    });
    expect(again.body).toEqual({ revoked: false });
  });

  it('the owner removes the admin who approved it: both instances refuse its token at once', async () => {
    const email = uniqueEmail('approver');
    const approver = await createMember(env, email, payerOrgId, 'admin');
    const token = await connected(await signInTo(first, email), payerOrgId);
    const removed = await browser.request(
      'DELETE',
      `/dashboard/api/orgs/${payerOrgId}/members/${approver.id}`,
    );
    expect(removed.status).toBe(200);
    await expectRefused(second, token);
    await expectRefused(first, token);
  });

  it('the maker deletes the OAuth client: every connection made through it stops on both instances', async () => {
    const doomed = await createOAuthClient(env, maker.app_id, [CALLBACK], { public: true });
    const token = await connectAndExchange(first.url, browser, doomed);
    for (const gateway of [first, second])
      expect(await infer(gateway, token.access_token)).toEqual([200, undefined]);
    await runCliJson(['oauth-client', 'delete', '--client-id', doomed.client_id], env);
    await expectRefused(second, token.access_token);
    await expectRefused(first, token.access_token);
    const revoke = await postForm<{ error: string }>(`${first.url}/oauth/revoke`, {
      token: token.access_token,
      client_id: doomed.client_id,
    });
    expect(revoke.status).toBe(401);
    expect(revoke.body.error).toBe('invalid_client');
  });
});

describe('a request in flight when the token is revoked', () => {
  it('settles normally and is charged to the paying wallet; the next one is refused', async () => {
    const token = await connected();
    const before = numericToNano(
      (await runCliJson<{ balance: string }>(['wallet', 'show', '--org-id', payerOrgId], env))
        .balance,
    );
    // The mock vendor waits 5 s before answering: once the request is admitted (its cost
    // held), the token is revoked while it waits upstream.
    const inFlight = postJson(
      `${second.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'slow one mock:latency_ms=5000' }],
        max_tokens: 16,
      },
      bearer(token),
    );
    await eventually(async () =>
      (await redis.hlen(keys.inFlight(payerOrgId))) > 0 ? true : undefined,
    );
    const revoked = await postForm<{ revoked: boolean }>(`${first.url}/oauth/revoke`, {
      token,
      client_id: client.client_id,
    });
    expect(revoked.body).toEqual({ revoked: true });
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    // (no other request between the two wallet readings: the refusal is checked after them)
    const requestId = answer.headers.get('x-request-id')!;
    const record = await eventually(async () => {
      const { rows } = await db.query<{
        org_id: string;
        status: string;
        wallet_cost: string;
        admitted_before_revocation: boolean;
      }>(
        `SELECT u.org_id, u.status, u.wallet_cost::text, u.created_at < c.revoked_at AS admitted_before_revocation
           FROM usage_records u JOIN app_connections c ON c.id = u.app_connection_id
          WHERE u.request_id = $1`,
        [requestId],
      );
      return rows[0];
    });
    expect(record).toMatchObject({
      org_id: payerOrgId,
      status: 'completed',
      admitted_before_revocation: true, // its record is dated at its admission (decision 402)
    });
    const after = numericToNano(
      (await runCliJson<{ balance: string }>(['wallet', 'show', '--org-id', payerOrgId], env))
        .balance,
    );
    expect(numericToNano(record.wallet_cost)).toBeGreaterThan(0n);
    expect(after).toBe(before - numericToNano(record.wallet_cost));
    for (const gateway of [first, second]) await expectRefused(gateway, token);
  });
});
