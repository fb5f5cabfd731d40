// Rotating an OAuth client's secret (decision 374): the new secret is shown once; the old one
// keeps authenticating at the token and revocation endpoints for the grace the admin chose and
// is then refused as a wrong one; grace 0 stops it at once; the connections made through the
// client and their tokens never notice. Through the dashboard API (roles, tenants, a public
// client, bad bodies, the audit log) and the CLI, on a started gateway with the real Postgres.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';

const { env, db } = isolatedContext('oauth-rotate');
let gateway: GatewayProcess;
let maker: SeededOrg;
let payer: SeededOrg;
let makerAdmin: DashboardClient;
let makerAdminId: string;
let makerMember: DashboardClient;
let makerViewer: DashboardClient;
let payerAdmin: DashboardClient;
let outsider: DashboardClient;

interface OAuthClientView {
  client_id: string;
  client_secret?: string;
  client_secret_hint: string | null;
  retired_secrets_expire_at: string[];
  public: boolean;
  redirect_uris: string[];
  status: string;
}

const CALLBACK = 'http://127.0.0.1:9/cb';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const rotatePath = (clientId: string) => `/dashboard/api/oauth-clients/${clientId}/rotate-secret`;

const memberIds = new Map<DashboardClient, string>();

async function member(orgId: string, role: string): Promise<DashboardClient> {
  const email = uniqueEmail(role);
  const created = await createMember(env, email, orgId, role);
  const client = await signInTo(gateway, email);
  memberIds.set(client, created.id);
  return client;
}

async function registerClient(isPublic = false): Promise<RegisteredClient> {
  const created = await makerAdmin.post<OAuthClientView>(
    `/dashboard/api/apps/${maker.app_id}/oauth-clients`,
    { name: 'Rotated app', redirect_uris: [CALLBACK], public: isPublic },
  );
  expect(created.status).toBe(201);
  return {
    client_id: created.body.client_id,
    redirect_uris: created.body.redirect_uris,
    ...(created.body.client_secret !== undefined && { client_secret: created.body.client_secret }),
  };
}

const withSecret = (client: RegisteredClient, secret: string): RegisteredClient => ({
  ...client,
  client_secret: secret,
});

/** A chat request with the connection's token: its status. */
async function infer(token: string): Promise<number> {
  const answer = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: 8 },
    bearer(token),
  );
  return answer.status;
}

/** A token exchange's answer for a fresh code, with `secret` (the code is issued to the payer). */
async function exchangeWith(client: RegisteredClient, secret: string) {
  return connectAndExchange(gateway.url, payerAdmin, withSecret(client, secret), {
    orgId: payer.org_id,
  }).then(
    (token) => ({ ok: true as const, token }),
    (error: Error) => ({ ok: false as const, error: error.message }),
  );
}

/** POST /oauth/revoke of `token` authenticated with `secret` (form fields). */
function revokeWith(client: RegisteredClient, secret: string, token: string) {
  return postForm<Record<string, unknown>>(`${gateway.url}/oauth/revoke`, {
    token,
    client_id: client.client_id,
    client_secret: secret,
  });
}

/** What a token request answers for the client authenticated with `secret` (no valid code). */
function tokenAnswerWith(client: RegisteredClient, secret: string) {
  return postForm<Record<string, unknown>>(`${gateway.url}/oauth/token`, {
    grant_type: 'authorization_code',
    code: 'gw_code_not_a_real_one',
    redirect_uri: CALLBACK,
    code_verifier: 'v'.repeat(43),
    client_id: client.client_id,
    client_secret: secret,
  });
}

async function storedSecrets(clientId: string) {
  const { rows } = await db.query<{
    client_secret_hash: string;
    client_secret_hint: string;
    retired: { hash: string; expires_at: string }[];
    retired_grace_s: number[];
  }>(
    `SELECT client_secret_hash, client_secret_hint, retired_secrets AS retired,
            ARRAY(SELECT round(extract(epoch FROM (r->>'expires_at')::timestamptz - now()))::int
                    FROM jsonb_array_elements(retired_secrets) r) AS retired_grace_s
       FROM oauth_clients WHERE id = $1`,
    [clientId],
  );
  return rows[0]!;
}

beforeAll(async () => {
  gateway = await startGateway(env);
  [maker, payer] = await Promise.all([
    seed(env, ['--name', 'Maker']),
    seed(env, ['--name', 'Payer', '--wallet', '20.00']),
  ]);
  [makerAdmin, makerMember, makerViewer, payerAdmin] = await Promise.all([
    member(maker.org_id, 'admin'),
    member(maker.org_id, 'member'),
    member(maker.org_id, 'viewer'),
    member(payer.org_id, 'admin'),
  ]);
  makerAdminId = memberIds.get(makerAdmin)!;
  const outsiderEmail = uniqueEmail('outsider');
  await runCliJson(['admin', 'create-user', '--email', outsiderEmail, '--password-stdin'], env, {
    stdin: TEST_PASSWORD,
  });
  outsider = await signInTo(gateway, outsiderEmail);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('rotating a client secret in the dashboard API', () => {
  it('shows the new secret once; the old one works until its grace ends, then is refused as a wrong one; connections keep working', async () => {
    const client = await registerClient();
    const oldSecret = client.client_secret!;
    const connected = await exchangeWith(client, oldSecret);
    if (!connected.ok) throw new Error(connected.error);
    const token = connected.token.access_token;
    expect(await infer(token)).toBe(200);

    // no body: the default grace, 24 hours
    const rotated = await makerAdmin.post<OAuthClientView>(rotatePath(client.client_id));
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toContain('no-store');
    const newSecret = rotated.body.client_secret!;
    expect(newSecret).toMatch(/^gw_client_secret_[0-9A-Za-z]{43}$/);
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body).toMatchObject({
      client_id: client.client_id,
      public: false,
      status: 'active',
      client_secret_hint: `${newSecret.slice(0, 21)}…`,
      retired_secrets_expire_at: [expect.any(String)],
    });
    // hashes only; the old one's grace is 24 hours by the database's clock
    const stored = await storedSecrets(client.client_id);
    expect(stored.client_secret_hash).toBe(sha256(newSecret));
    expect(stored.retired.map((retired) => retired.hash)).toEqual([sha256(oldSecret)]);
    expect(stored.retired_grace_s[0]).toBeGreaterThan(86_400 - 600);
    expect(stored.retired_grace_s[0]).toBeLessThanOrEqual(86_400);
    expect(JSON.stringify(stored)).not.toContain(newSecret);
    expect(JSON.stringify(stored)).not.toContain(oldSecret);
    // the list shows the hint and the old secret's end, never a secret
    const list = await makerViewer.get<{ data: OAuthClientView[] }>(
      `/dashboard/api/apps/${maker.app_id}/oauth-clients`,
    );
    const listed = list.body.data.find((row) => row.client_id === client.client_id)!;
    expect(listed.retired_secrets_expire_at).toEqual(rotated.body.retired_secrets_expire_at);
    expect(JSON.stringify(list.body)).not.toContain(newSecret);

    // the connection made before the rotation is untouched
    expect(await infer(token)).toBe(200);
    // both secrets exchange codes and revoke tokens during the grace
    const viaNew = await exchangeWith(client, newSecret);
    const viaOld = await exchangeWith(client, oldSecret);
    expect(viaNew.ok).toBe(true);
    expect(viaOld.ok).toBe(true);
    if (!viaOld.ok || !viaNew.ok) return;
    expect(await infer(viaOld.token.access_token)).toBe(200);
    const revokedByOld = await revokeWith(client, oldSecret, viaOld.token.access_token);
    expect(revokedByOld.status).toBe(200);
    expect(revokedByOld.body).toEqual({ revoked: true });
    expect(await infer(viaOld.token.access_token)).toBe(401);

    // the grace ends (moved into the past rather than waited for): the old secret is refused
    // exactly as a wrong one is, at both endpoints
    await db.query(
      `UPDATE oauth_clients SET retired_secrets = jsonb_set(retired_secrets, '{0,expires_at}',
         to_jsonb(now() - interval '1 second')) WHERE id = $1`,
      [client.client_id],
    );
    const wrongSecret = `gw_client_secret_${'x'.repeat(43)}`;
    for (const attempt of [
      tokenAnswerWith,
      (c: RegisteredClient, s: string) => revokeWith(c, s, token),
    ]) {
      const expired = await attempt(client, oldSecret);
      const wrong = await attempt(client, wrongSecret);
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual(wrong.body);
      expect(expired.body.error).toBe('invalid_client');
    }
    expect((await exchangeWith(client, oldSecret)).ok).toBe(false);
    // an expired one is no longer listed; the new secret and every connection still work
    const after = await makerAdmin.get<{ data: OAuthClientView[] }>(
      `/dashboard/api/apps/${maker.app_id}/oauth-clients`,
    );
    expect(
      after.body.data.find((row) => row.client_id === client.client_id)!.retired_secrets_expire_at,
    ).toEqual([]);
    expect((await exchangeWith(client, newSecret)).ok).toBe(true);
    expect(await infer(token)).toBe(200);
    expect(await infer(viaNew.token.access_token)).toBe(200);

    const { rows: audit } = await db.query<{
      org_id: string;
      user_id: string;
      details: Record<string, unknown>;
    }>(
      `SELECT org_id, user_id, details FROM dashboard_audit_log
        WHERE object_id = $1 AND action = 'oauth_client.rotate_secret'`,
      [client.client_id],
    );
    expect(audit).toEqual([
      { org_id: maker.org_id, user_id: makerAdminId, details: { grace_seconds: 86_400 } },
    ]);
    expect(JSON.stringify(audit)).not.toContain(newSecret);
  });

  it('grace 0 (a leaked secret) stops every old secret at once; at most 3 retired secrets work beside the current one', async () => {
    const client = await registerClient();
    const connected = await exchangeWith(client, client.client_secret!);
    if (!connected.ok) throw new Error(connected.error);
    const token = connected.token.access_token;

    const secrets = [client.client_secret!];
    for (let rotation = 0; rotation < 3; rotation += 1) {
      const rotated = await makerAdmin.post<OAuthClientView>(rotatePath(client.client_id), {
        grace_seconds: 3600,
      });
      expect(rotated.status).toBe(200);
      expect(rotated.body.retired_secrets_expire_at).toHaveLength(rotation + 1);
      secrets.push(rotated.body.client_secret!);
    }
    for (const secret of secrets)
      expect((await tokenAnswerWith(client, secret)).body.error).toBe('invalid_grant');
    // a fourth rotation with a grace would end the first retired one early: refused, nothing changes
    const fourth = await makerAdmin.post<ErrorBody>(rotatePath(client.client_id), {
      grace_seconds: 3600,
    });
    expect(fourth.status).toBe(409);
    expect(fourth.body.error.code).toBe('gw_conflict');
    expect(fourth.body.error.message).toContain(
      'at most 3 earlier secrets authenticate beside the current one',
    );
    expect((await storedSecrets(client.client_id)).client_secret_hash).toBe(sha256(secrets[3]!));

    const leaked = await makerAdmin.post<OAuthClientView>(rotatePath(client.client_id), {
      grace_seconds: 0,
    });
    expect(leaked.status).toBe(200);
    expect(leaked.body.retired_secrets_expire_at).toEqual([]);
    const newest = leaked.body.client_secret!;
    expect((await storedSecrets(client.client_id)).retired).toEqual([]);
    for (const secret of secrets) {
      const refused = await tokenAnswerWith(client, secret);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_client');
      expect((await revokeWith(client, secret, token)).status).toBe(401);
    }
    // the connection is untouched by every rotation; the new secret revokes its token
    expect(await infer(token)).toBe(200);
    expect((await exchangeWith(client, newest)).ok).toBe(true);
    const revoked = await revokeWith(client, newest, token);
    expect(revoked.body).toEqual({ revoked: true });
    expect(await infer(token)).toBe(401);
  });

  it('refuses viewers and members (403), other organizations (404), a public client (409), a deleted client (404) and bad bodies (400), changing nothing', async () => {
    const client = await registerClient();
    const before = await storedSecrets(client.client_id);
    for (const caller of [makerViewer, makerMember]) {
      const refused = await caller.post<ErrorBody>(rotatePath(client.client_id), {});
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('gw_role_forbidden');
    }
    // another tenant, and the paying organization's admin, cannot see it
    for (const caller of [outsider, payerAdmin]) {
      const refused = await caller.post<ErrorBody>(rotatePath(client.client_id), {});
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe('gw_not_found');
    }
    const noToken = await makerAdmin.post<ErrorBody>(
      rotatePath(client.client_id),
      {},
      { csrf: false },
    );
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('gw_csrf_token_invalid');
    for (const [body, message] of [
      [{ grace_seconds: -1 }, 'grace_seconds: must be at least 0'],
      [{ grace_seconds: 604_801 }, 'grace_seconds: must be at most 604800 (7 days)'],
      [{ grace_seconds: 1.5 }, 'grace_seconds: must be a whole number'],
      [{ grace_seconds: 60, extra: true }, undefined],
    ] as const) {
      const refused = await makerAdmin.post<ErrorBody>(rotatePath(client.client_id), body);
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('gw_invalid_request');
      if (message) expect(refused.body.error.message).toContain(message);
    }
    expect(await storedSecrets(client.client_id)).toEqual(before);

    const publicClient = await registerClient(true);
    const refusedPublic = await makerAdmin.post<ErrorBody>(rotatePath(publicClient.client_id), {});
    expect(refusedPublic.status).toBe(409);
    expect(refusedPublic.body.error).toEqual({
      code: 'gw_conflict',
      message:
        'this OAuth client is public: it has no client_secret to rotate (PKCE alone binds its codes)',
    });
    const { rows: publicRow } = await db.query(
      'SELECT client_secret_hash, retired_secrets FROM oauth_clients WHERE id = $1',
      [publicClient.client_id],
    );
    expect(publicRow).toEqual([{ client_secret_hash: null, retired_secrets: [] }]);

    const deleted = await makerAdmin.request(
      'DELETE',
      `/dashboard/api/oauth-clients/${client.client_id}`,
    );
    expect(deleted.status).toBe(200);
    const afterDelete = await makerAdmin.post<ErrorBody>(rotatePath(client.client_id), {});
    expect(afterDelete.status).toBe(404);
    const { rows: audit } = await db.query(
      `SELECT 1 FROM dashboard_audit_log WHERE object_id = ANY($1) AND action = 'oauth_client.rotate_secret'`,
      [[client.client_id, publicClient.client_id]],
    );
    expect(audit).toEqual([]);
  });
});

describe('rotations racing each other and a delete', () => {
  it('five at once: three are kept (each audited), the others 409; every secret handed out authenticates', async () => {
    const client = await registerClient();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        makerAdmin.post<OAuthClientView & ErrorBody>(rotatePath(client.client_id), {
          grace_seconds: 3600,
        }),
      ),
    );
    const rotated = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(rotated).toHaveLength(3);
    expect(refused.map((answer) => [answer.status, answer.body.error.code])).toEqual([
      [409, 'gw_conflict'],
      [409, 'gw_conflict'],
    ]);
    // The original and every secret an admin was shown: none was silently lost to a race.
    for (const secret of [client.client_secret!, ...rotated.map((a) => a.body.client_secret!)]) {
      expect((await tokenAnswerWith(client, secret)).body.error).toBe('invalid_grant');
    }
    const stored = await storedSecrets(client.client_id);
    expect(stored.retired).toHaveLength(3);
    const { rows: audit } = await db.query(
      `SELECT 1 FROM dashboard_audit_log WHERE object_id = $1 AND action = 'oauth_client.rotate_secret'`,
      [client.client_id],
    );
    expect(audit).toHaveLength(3);
  });

  it('racing a delete: whichever wins, no secret authenticates once the client is deleted', async () => {
    const client = await registerClient();
    const [rotation, deletion] = await Promise.all([
      makerAdmin.post<OAuthClientView>(rotatePath(client.client_id), { grace_seconds: 3600 }),
      makerAdmin.request('DELETE', `/dashboard/api/oauth-clients/${client.client_id}`),
    ]);
    expect(deletion.status).toBe(200);
    expect([200, 404]).toContain(rotation.status);
    const secrets = [client.client_secret!];
    if (rotation.status === 200) secrets.push(rotation.body.client_secret!);
    for (const secret of secrets) {
      const answer = await tokenAnswerWith(client, secret);
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
    }
  });
});

describe('gw oauth-client rotate-secret', () => {
  it('prints the new secret once; --grace-seconds 0 stops the old one; a public client and a bad grace are usage errors', async () => {
    const client = await createOAuthClient(env, maker.app_id, [CALLBACK]);
    const connected = await exchangeWith(client, client.client_secret!);
    if (!connected.ok) throw new Error(connected.error);

    const graced = await runCliJson<{
      client_id: string;
      client_secret: string;
      retired_secrets_expire_at: string[];
    }>(['oauth-client', 'rotate-secret', '--client-id', client.client_id], env);
    expect(graced.client_id).toBe(client.client_id);
    expect(graced.client_secret).toMatch(/^gw_client_secret_[0-9A-Za-z]{43}$/);
    expect(graced.retired_secrets_expire_at).toHaveLength(1);
    expect((await storedSecrets(client.client_id)).retired_grace_s[0]).toBeGreaterThan(
      86_400 - 600,
    );
    expect((await exchangeWith(client, client.client_secret!)).ok).toBe(true);

    const leaked = await runCliJson<{ client_secret: string; retired_secrets_expire_at: string[] }>(
      ['oauth-client', 'rotate-secret', '--client-id', client.client_id, '--grace-seconds', '0'],
      env,
    );
    expect(leaked.retired_secrets_expire_at).toEqual([]);
    for (const old of [client.client_secret!, graced.client_secret]) {
      expect((await tokenAnswerWith(client, old)).body.error).toBe('invalid_client');
    }
    expect((await exchangeWith(client, leaked.client_secret)).ok).toBe(true);
    expect(await infer(connected.token.access_token)).toBe(200);

    const { rows: audit } = await db.query<{ user_id: string | null; details: unknown }>(
      `SELECT user_id, details FROM dashboard_audit_log
        WHERE object_id = $1 AND action = 'oauth_client.rotate_secret' ORDER BY id`,
      [client.client_id],
    );
    expect(audit).toEqual([
      { user_id: 'cli', details: { grace_seconds: 86_400 } },
      { user_id: 'cli', details: { grace_seconds: 0 } },
    ]);

    const tooLong = await runCli(
      [
        'oauth-client',
        'rotate-secret',
        '--client-id',
        client.client_id,
        '--grace-seconds',
        '604801',
      ],
      env,
    );
    expect(tooLong.code).not.toBe(0);
    expect(tooLong.stderr).toContain('--grace-seconds must be a whole number from 0 to 604800');
    const publicClient = await createOAuthClient(env, maker.app_id, [CALLBACK], { public: true });
    const refused = await runCli(
      ['oauth-client', 'rotate-secret', '--client-id', publicClient.client_id],
      env,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('gw_conflict');
    expect(refused.stderr).toContain('this OAuth client is public');
    const missing = await runCli(
      ['oauth-client', 'rotate-secret', '--client-id', 'gw_client_0000000000000000'],
      env,
    );
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('gw_not_found');
    expect((await storedSecrets(client.client_id)).client_secret_hash).toBe(
      sha256(leaked.client_secret),
    );
  });
});
