// OAuth connections end to end (issue 14), on a real gateway with the real Redis and Postgres,
// driven over HTTP with the session cookie a browser would keep: registering clients, the
// authorization request (sign-in first, then the consent page), approval and denial, the code
// exchange with PKCE for public and confidential clients, every way a code or redirect URI is
// refused, inference paid by the connecting user's organization (never the app's), and
// RFC 7009 revocation.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { signInTo, TEST_PASSWORD, uniqueEmail, type DashboardClient } from './support/dashboard.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import {
  authorizeQuery,
  connect,
  connectAndExchange,
  createOAuthClient,
  getAuthorize,
  pkcePair,
  postDecision,
  postForm,
  readConsentForm,
  readErrorPageLink,
  redirectParams,
  type RegisteredClient,
  type TokenAnswer,
} from './support/oauth.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { rawRequest, type RawAnswer } from './support/raw-http.js';
import { eventually, firstNot200 } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('oauth');
let gateway: GatewayProcess;
/** The app's organization: it registers the OAuth clients and never pays for their requests. */
let maker: SeededOrg;
let email: string;
let user: { id: string; personal_org_id: string };
let teamOrg: SeededOrg;
/** The user is a member there: may use it, not connect apps to its wallet. */
let memberOrg: SeededOrg;
let viewedOrg: SeededOrg;
let browser: DashboardClient;
let publicClient: RegisteredClient;
let confidentialClient: RegisteredClient;

const CALLBACK = 'http://127.0.0.1:9/callback';
const WEB_CALLBACK = 'https://app.example.com/callback?mode=web';

type OAuthError = { error: string; error_description: string; gw_code: string };

const chat = (content = 'hello from an OAuth app') => ({
  model: 'vendor_b/gpt-4o-mini',
  messages: [{ role: 'user', content }],
  max_tokens: 20,
});

async function walletBalanceNano(orgId: string): Promise<bigint> {
  const shown = await runCliJson<{ balance: string }>(['wallet', 'show', '--org-id', orgId], env);
  return numericToNano(shown.balance);
}

const codeKey = (code: string) =>
  `${prefix}:oauth-code:{${createHash('sha256').update(code).digest('hex')}}`;

/**
 * A fresh code for the client (approved in the user's personal organization), and the id of
 * the connection its exchange will make (the code carries it).
 */
async function freshCode(
  client: RegisteredClient,
  redirectUri = client.redirect_uris[0]!,
): Promise<{ code: string; verifier: string; connectionId: string }> {
  const pkce = pkcePair();
  const answer = await connect(browser, {
    clientId: client.client_id,
    redirectUri,
    state: 'st',
    challenge: pkce.challenge,
  });
  expect(answer.status).toBe(302);
  const code = redirectParams(answer.location!).params.get('code')!;
  const grant = JSON.parse((await redis.get(codeKey(code)))!) as { connection_id: string };
  return { code, verifier: pkce.verifier, connectionId: grant.connection_id };
}

/** The rows of these connections: an exchange that yields no token makes none. */
async function connectionRows(ids: readonly string[]): Promise<unknown[]> {
  const { rows } = await db.query('SELECT id, status FROM app_connections WHERE id = ANY($1)', [
    ids,
  ]);
  return rows;
}

function exchange(
  client: RegisteredClient,
  fields: Record<string, string>,
  basic?: { id: string; secret: string },
) {
  return postForm<TokenAnswer & OAuthError>(
    `${gateway.url}/oauth/token`,
    {
      grant_type: 'authorization_code',
      ...(basic ? {} : { client_id: client.client_id }),
      ...(!basic && client.client_secret !== undefined && { client_secret: client.client_secret }),
      ...fields,
    },
    basic,
  );
}

beforeAll(async () => {
  gateway = await startGateway(env);
  [maker, teamOrg, memberOrg, viewedOrg] = await Promise.all([
    seed(env, ['--name', 'App Maker Inc', '--wallet', '50.00']),
    seed(env, ['--name', 'Team <Org>', '--wallet', '5.00']),
    seed(env, ['--name', 'Used Org', '--wallet', '5.00']),
    seed(env, ['--name', 'Watched Org', '--wallet', '5.00']),
  ]);
  email = uniqueEmail('oauth-user');
  user = await runCliJson(['admin', 'create-user', '--email', email, '--password-stdin'], env, {
    stdin: TEST_PASSWORD,
  });
  await db.query(
    `INSERT INTO org_memberships (org_id, user_id, role)
     VALUES ($1, $4, 'admin'), ($2, $4, 'member'), ($3, $4, 'viewer')`,
    [teamOrg.org_id, memberOrg.org_id, viewedOrg.org_id, user.id],
  );
  await runCliJson(['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '10.00'], env);
  browser = await signInTo(gateway, email);
  [publicClient, confidentialClient] = await Promise.all([
    createOAuthClient(env, maker.app_id, [CALLBACK], { public: true, name: 'Pocket app' }),
    createOAuthClient(env, maker.app_id, [WEB_CALLBACK, CALLBACK], { name: 'Web app' }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('gw oauth-client create', () => {
  it('prints the client as the dashboard API does, a confidential client’s secret once; stores only the secret’s hash', async () => {
    expect(publicClient).toMatchObject({
      client_id: expect.stringMatching(/^gw_client_[0-9A-Za-z]{24}$/),
      public: true,
      client_secret_hint: null,
      redirect_uris: [CALLBACK],
    });
    expect(publicClient).not.toHaveProperty('client_secret');
    expect(confidentialClient).toMatchObject({
      client_id: expect.stringMatching(/^gw_client_[0-9A-Za-z]{24}$/),
      public: false,
      client_secret: expect.stringMatching(/^gw_client_secret_[0-9A-Za-z]{43}$/),
      redirect_uris: [WEB_CALLBACK, CALLBACK],
    });
    const { rows } = await db.query(
      'SELECT org_id, app_id, client_secret_hash, redirect_uris FROM oauth_clients WHERE id = $1',
      [confidentialClient.client_id],
    );
    expect(rows).toEqual([
      {
        org_id: maker.org_id,
        app_id: maker.app_id,
        client_secret_hash: createHash('sha256')
          .update(confidentialClient.client_secret!)
          .digest('hex'),
        redirect_uris: [WEB_CALLBACK, CALLBACK],
      },
    ]);
    const listed = await runCli(['oauth-client', 'list', '--app-id', maker.app_id], env);
    expect(listed.stdout).not.toContain(confidentialClient.client_secret);
  });

  it('refuses a name that displays as another (a bidirectional override), creating nothing', async () => {
    const before = await db.query('SELECT id FROM oauth_clients WHERE app_id = $1', [maker.app_id]);
    for (const name of ['Support\u202Etob', 'tab\tname', 'c1\u0085name']) {
      const result = await runCli(
        [
          'oauth-client',
          'create',
          '--app-id',
          maker.app_id,
          '--name',
          name,
          '--redirect-uri',
          CALLBACK,
        ],
        env,
      );
      expect(result.code, name).toBe(2);
      const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe('gw_invalid_request');
      expect(error.message).toMatch(/^--name: must not contain (control|bidirectional)/);
    }
    const after = await db.query('SELECT id FROM oauth_clients WHERE app_id = $1', [maker.app_id]);
    expect(after.rows).toEqual(before.rows);
  });

  it('refuses redirect URIs that cannot be matched safely, in the JSON error shape', async () => {
    for (const uri of [
      'http://app.example.com/cb', // plain http off loopback
      'https://app.example.com/cb#frag',
      'javascript:alert(1)',
      '/relative/cb',
      'https://user:pw@app.example.com/cb',
      'https://app.example.com/a b',
    ]) {
      const result = await runCli(
        ['oauth-client', 'create', '--app-id', maker.app_id, '--name', 'x', '--redirect-uri', uri],
        env,
      );
      expect(result.code, uri).toBe(2);
      expect(JSON.parse(result.stderr).error.code).toBe('gw_invalid_request');
    }
    const none = await runCli(
      ['oauth-client', 'create', '--app-id', maker.app_id, '--name', 'x'],
      env,
    );
    expect(none.code).toBe(2);
  });

  it('refuses a redirect URI whose query names a parameter the answer adds (iss, state, code…)', async () => {
    // The answer keeps the registered query and adds its own `iss` (RFC 9207): a second one
    // would leave the client reading the registered value (decision 354).
    for (const [uri, name] of [
      ['https://app.example.com/cb?iss=https%3A%2F%2Fother.example', 'iss'],
      ['https://app.example.com/cb?mode=web&i%73s=x', 'iss'], // as the client decodes it
      ['https://app.example.com/cb?state=fixed', 'state'],
      ['https://app.example.com/cb?code=1', 'code'],
      ['com.example.app:/cb?error=x', 'error'],
    ]) {
      const result = await runCli(
        ['oauth-client', 'create', '--app-id', maker.app_id, '--name', 'x', '--redirect-uri', uri!],
        env,
      );
      expect(result.code, uri).toBe(2);
      expect((JSON.parse(result.stderr) as ErrorBody).error).toEqual({
        code: 'gw_invalid_request',
        message: `--redirect-uri #1: must not carry ${name} in its query: the authorization response adds its own ${name}, and a response parameter is sent once (RFC 6749 section 3.1, RFC 9207)`,
      });
    }
    // Errors name the flag the user typed (decision 589): which --redirect-uri, counting from 1.
    const second = await runCli(
      [
        ...['oauth-client', 'create', '--app-id', maker.app_id, '--name', 'x'],
        ...['--redirect-uri', 'https://app.example.com/cb'],
        ...['--redirect-uri', 'https://app.example.com/cb#frag'],
      ],
      env,
    );
    expect((JSON.parse(second.stderr) as ErrorBody).error.message).toMatch(/^--redirect-uri #2: /);
    const twice = await runCli(
      [
        ...['oauth-client', 'create', '--app-id', maker.app_id, '--name', 'x'],
        ...['--redirect-uri', 'https://app.example.com/cb'],
        ...['--redirect-uri', 'https://app.example.com/cb'],
      ],
      env,
    );
    expect((JSON.parse(twice.stderr) as ErrorBody).error).toEqual({
      code: 'gw_invalid_request',
      message: '--redirect-uri: each URI once',
    });
  });

  it('sends nothing to such a URI registered before the rule: refused on the gateway’s page', async () => {
    const legacy = await createOAuthClient(env, maker.app_id, [CALLBACK], { public: true });
    const withIss = 'http://127.0.0.1:9/callback?iss=https%3A%2F%2Fother.example';
    // As a row written before registration refused it.
    await db.query('UPDATE oauth_clients SET redirect_uris = $2 WHERE id = $1', [
      legacy.client_id,
      [withIss],
    ]);
    const query = authorizeQuery({
      clientId: legacy.client_id,
      redirectUri: withIss,
      state: 's',
      challenge: pkcePair().challenge,
    });
    const answer = await getAuthorize(gateway.url, query, {
      cookie: browser.cookie!,
      accept: 'application/json',
    });
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect((JSON.parse(answer.text) as ErrorBody).error).toMatchObject({
      code: 'gw_redirect_uri_mismatch',
      message: expect.stringContaining('must not carry iss in its query') as unknown,
    });
  });
});

describe('the authorization request', () => {
  it('sends a visitor without a session to the sign-in page, and back to the same request', async () => {
    const query = authorizeQuery({
      clientId: publicClient.client_id,
      redirectUri: CALLBACK,
      state: 'abc',
      challenge: pkcePair().challenge,
    });
    const anonymous = await getAuthorize(gateway.url, query);
    expect(anonymous.status).toBe(302);
    const location = new URL(anonymous.location!, gateway.url);
    expect(location.pathname).toBe('/dashboard/sign-in');
    expect(location.searchParams.get('next')).toBe(`/oauth/authorize?${query}`);
    // an expired or unknown session is treated the same
    const stale = await getAuthorize(gateway.url, query, {
      cookie: `__Host-gw_session=${'x'.repeat(43)}`,
    });
    expect(stale.status).toBe(302);
    expect(stale.location).toBe(anonymous.location);
  });

  it('shows a signed-in user a consent page naming the app, its maker and the organizations that may pay, under a strict policy', async () => {
    const page = await getAuthorize(
      gateway.url,
      authorizeQuery({
        clientId: confidentialClient.client_id,
        redirectUri: WEB_CALLBACK,
        state: 'q"<s>',
        challenge: pkcePair().challenge,
      }),
      { cookie: browser.cookie! },
    );
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const policy = page.headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("form-action 'self' https://app.example.com");
    expect(policy).not.toContain('unsafe-inline');
    // one script, inline, allowed by its exact text's hash and nothing else (decision 425)
    const scripts = [...page.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(page.text.match(/<script/g)).toHaveLength(1);
    const scriptHash = createHash('sha256').update(scripts[0]!).digest('base64');
    expect(policy.split('; ').filter((part) => part.startsWith('script-src'))).toEqual([
      `script-src 'sha256-${scriptHash}'`,
    ]);
    expect(page.text).toContain('Seeded app'); // the app's name (as the seed names it)
    expect(page.text).toContain('App Maker Inc');
    expect(page.text).toContain('Team &lt;Org&gt;'); // names are escaped
    const form = readConsentForm(page.text);
    // the personal organization first, then those where the user may connect apps (admin or
    // owner); not the one where they are a member, nor the viewed one
    expect(form.orgOptions).toEqual([user.personal_org_id, teamOrg.org_id]);
    expect(form.fields).toMatchObject({
      client_id: confidentialClient.client_id,
      redirect_uri: WEB_CALLBACK,
      state: 'q"<s>',
      code_challenge_method: 'S256',
      csrf_token: browser.csrfToken,
    });
  });

  it('refuses an unknown client and every redirect URI that is not exactly a registered one: an error page or JSON, never a redirect', async () => {
    const challenge = pkcePair().challenge;
    const variants = [
      'http://app.example.com/callback?mode=web', // scheme
      'https://evil.example.com/callback?mode=web', // host
      'https://app.example.com:8443/callback?mode=web', // port
      'https://app.example.com:443/callback?mode=web', // the default port, spelled out
      'https://app.example.com/callback2?mode=web', // path
      'https://app.example.com/callback?mode=app', // query
      'https://app.example.com/callback', // query missing
      'https://app.example.com/callback?mode=web&x=1', // query extended
      'https://app.example.com/callback/?mode=web', // trailing slash
      'https://APP.example.com/callback?mode=web', // case
      'http://127.0.0.1:10/callback', // loopback, another port
    ];
    for (const redirectUri of variants) {
      const query = authorizeQuery({
        clientId: confidentialClient.client_id,
        redirectUri,
        state: 's',
        challenge,
      });
      const json = await getAuthorize(gateway.url, query, {
        cookie: browser.cookie!,
        accept: 'application/json',
      });
      expect(json.status, redirectUri).toBe(400);
      expect(json.location).toBeNull();
      expect((JSON.parse(json.text) as ErrorBody).error.code).toBe('gw_redirect_uri_mismatch');
      const html = await getAuthorize(gateway.url, query, { cookie: browser.cookie! });
      expect(html.status).toBe(400);
      expect(html.location).toBeNull();
      expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(html.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(html.text).toContain('gw_redirect_uri_mismatch');
    }
    for (const query of [
      authorizeQuery({
        clientId: 'gw_client_doesnotexist0000000',
        redirectUri: CALLBACK,
        challenge,
      }),
      authorizeQuery({ clientId: publicClient.client_id, redirectUri: CALLBACK, challenge }) +
        `&redirect_uri=${encodeURIComponent(CALLBACK)}`, // sent twice
      `response_type=code&client_id=${publicClient.client_id}&code_challenge=${challenge}&code_challenge_method=S256`,
    ]) {
      const answer = await getAuthorize(gateway.url, query, { accept: 'application/json' });
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      expect((JSON.parse(answer.text) as ErrorBody).error.code).toBe('gw_redirect_uri_mismatch');
    }
    // the answer to the consent page is checked the same way
    const page = await getAuthorize(
      gateway.url,
      authorizeQuery({ clientId: publicClient.client_id, redirectUri: CALLBACK, challenge }),
      { cookie: browser.cookie! },
    );
    const form = readConsentForm(page.text);
    const tampered = await postDecision(browser, {
      ...form.fields,
      redirect_uri: 'http://127.0.0.1:9/callback/',
      org_id: user.personal_org_id,
      decision: 'approve',
    });
    expect(tampered.status).toBe(400);
    expect(tampered.location).toBeNull();
    expect(tampered.text).toContain('gw_redirect_uri_mismatch');
  });

  it('shows other problems on its own page, with a link back to the registered redirect URI carrying the error and the state', async () => {
    const base = { clientId: publicClient.client_id, redirectUri: CALLBACK, state: 'keep-me' };
    const challenge = pkcePair().challenge;
    const cases: Array<[Parameters<typeof authorizeQuery>[0], string, RegExp]> = [
      [{ ...base }, 'invalid_request', /code_challenge is required/],
      [{ ...base, challenge, method: 'plain' }, 'invalid_request', /S256/],
      [{ ...base, challenge: 'too-short' }, 'invalid_request', /43 characters/],
      [{ ...base, challenge, responseType: 'token' }, 'unsupported_response_type', /code/],
    ];
    for (const [request, error, description] of cases) {
      // Never an automatic redirect (RFC 9700 section 4.11.2, decision 366): the user follows
      // the link, or not.
      const answer = await getAuthorize(gateway.url, authorizeQuery(request), {
        cookie: browser.cookie!,
      });
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      const { base: target, params } = redirectParams(readErrorPageLink(answer.text)!);
      expect(target).toBe(CALLBACK);
      expect(params.get('error')).toBe(error);
      expect(params.get('error_description')).toMatch(description);
      expect(params.get('state')).toBe('keep-me');
      expect(params.get('code')).toBeNull();
    }
  });

  it('keeps a redirect URI’s own query as registered when it adds the answer', async () => {
    const pkce = pkcePair();
    const answer = await connect(browser, {
      clientId: confidentialClient.client_id,
      redirectUri: WEB_CALLBACK,
      state: 'w',
      challenge: pkce.challenge,
    });
    expect(answer.status).toBe(302);
    expect(answer.location).toMatch(
      /^https:\/\/app\.example\.com\/callback\?mode=web&code=[0-9A-Za-z]{43}&state=w&iss=[^&]+$/,
    );
    // the gateway's issuer identifier (RFC 9207)
    expect(new URL(answer.location!).searchParams.get('iss')).toBe(browser.origin);
  });
});

describe('the user’s answer', () => {
  it('denied: 302 with error=access_denied and the state; no connection is made', async () => {
    const before = await db.query(
      'SELECT count(*)::int AS n FROM app_connections WHERE org_id = $1',
      [user.personal_org_id],
    );
    const answer = await connect(
      browser,
      {
        clientId: publicClient.client_id,
        redirectUri: CALLBACK,
        state: 'no-thanks',
        challenge: pkcePair().challenge,
      },
      { decision: 'deny' },
    );
    expect(answer.status).toBe(302);
    const { base, params } = redirectParams(answer.location!);
    expect(base).toBe(CALLBACK);
    expect(Object.fromEntries(params)).toEqual({
      error: 'access_denied',
      error_description: 'the user denied the request',
      state: 'no-thanks',
      iss: browser.origin, // the gateway's issuer identifier (RFC 9207)
    });
    const after = await db.query(
      'SELECT count(*)::int AS n FROM app_connections WHERE org_id = $1',
      [user.personal_org_id],
    );
    expect(after.rows).toEqual(before.rows);
  });

  it('needs the session’s CSRF token in the form, the gateway’s Origin and a paying organization where the user may connect apps', async () => {
    const page = await getAuthorize(
      gateway.url,
      authorizeQuery({
        clientId: publicClient.client_id,
        redirectUri: CALLBACK,
        challenge: pkcePair().challenge,
      }),
      { cookie: browser.cookie! },
    );
    const { fields } = readConsentForm(page.text);
    const approve = { ...fields, org_id: user.personal_org_id, decision: 'approve' };
    const json = { accept: 'application/json' };
    const cases: Array<
      [Promise<{ status: number; text: string; location: string | null }>, number, string]
    > = [
      [
        postDecision(browser, { ...approve, csrf_token: 'x'.repeat(43) }, json),
        403,
        'gw_csrf_token_invalid',
      ],
      [postDecision(browser, { ...approve, csrf_token: '' }, json), 403, 'gw_csrf_token_invalid'],
      [
        postDecision(browser, approve, { ...json, origin: 'https://evil.example' }),
        403,
        'gw_origin_not_allowed',
      ],
      [postDecision(browser, approve, { ...json, origin: null }), 403, 'gw_origin_not_allowed'],
      [
        postDecision(browser, { ...approve, org_id: viewedOrg.org_id }, json),
        403,
        'gw_role_forbidden',
      ],
      // a member may use the organization, not issue keys: nor hand its wallet to an app
      [
        postDecision(browser, { ...approve, org_id: memberOrg.org_id }, json),
        403,
        'gw_role_forbidden',
      ],
      [postDecision(browser, { ...approve, org_id: maker.org_id }, json), 404, 'gw_not_found'],
      [postDecision(browser, { ...approve, decision: 'maybe' }, json), 400, 'gw_invalid_request'],
    ];
    for (const [pending, status, code] of cases) {
      const answer = await pending;
      expect(answer.status, code).toBe(status);
      expect(answer.location).toBeNull();
      expect((JSON.parse(answer.text) as ErrorBody).error.code).toBe(code);
    }
    const signedOut = await fetch(`${gateway.url}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: browser.origin },
      body: new URLSearchParams(approve).toString(),
      redirect: 'manual',
    });
    expect(signedOut.status).toBe(401);
    const { rowCount } = await db.query(
      `SELECT 1 FROM app_connections WHERE oauth_client_id = $1 AND org_id IN ($2, $3, $4)`,
      [publicClient.client_id, viewedOrg.org_id, maker.org_id, memberOrg.org_id],
    );
    expect(rowCount).toBe(0);
  });

  it('approved: a single-use code held 60 s in Redis under its hash only; the connection is made by its exchange, with its token', async () => {
    const pkce = pkcePair();
    const answer = await connect(
      browser,
      {
        clientId: publicClient.client_id,
        redirectUri: CALLBACK,
        state: 'ok',
        challenge: pkce.challenge,
      },
      { orgId: teamOrg.org_id },
    );
    expect(answer.status).toBe(302);
    const { params } = redirectParams(answer.location!);
    const code = params.get('code')!;
    expect(code).toMatch(/^[0-9A-Za-z]{43}$/);
    expect(params.get('state')).toBe('ok');
    const key = codeKey(code);
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    const stored = JSON.parse((await redis.get(key))!) as Record<string, string>;
    expect(stored).toMatchObject({
      client_id: publicClient.client_id,
      redirect_uri: CALLBACK,
      code_challenge: pkce.challenge,
      user_id: user.id,
      org_id: teamOrg.org_id,
      connection_id: expect.stringMatching(/^conn_/),
    });
    expect(await redis.exists(`${prefix}:oauth-code:{${code}}`)).toBe(0);
    // no connection before the exchange: one that never gets a token never exists
    expect(await connectionRows([stored.connection_id!])).toEqual([]);
    const listed = await browser.get<{ data: { id: string }[] }>(
      `/dashboard/api/orgs/${teamOrg.org_id}/connected-apps`,
    );
    expect(listed.body.data.map((row) => row.id)).not.toContain(stored.connection_id);

    const token = await exchange(publicClient, {
      code,
      redirect_uri: CALLBACK,
      code_verifier: pkce.verifier,
    });
    expect(token.status).toBe(200);
    expect(token.body.app_connection_id).toBe(stored.connection_id);
    const { rows } = await db.query(
      `SELECT c.org_id, c.app_id, c.status, c.connected_by_user_id, k.kind, k.status AS token
         FROM app_connections c JOIN api_keys k ON k.app_connection_id = c.id
        WHERE c.oauth_client_id = $1 AND c.org_id = $2`,
      [publicClient.client_id, teamOrg.org_id],
    );
    expect(rows).toEqual([
      {
        org_id: teamOrg.org_id,
        app_id: maker.app_id,
        status: 'active',
        connected_by_user_id: user.id,
        kind: 'oauth_token',
        token: 'active',
      },
    ]);
    const audit = await db.query(
      `SELECT action, user_id FROM dashboard_audit_log WHERE org_id = $1 AND action LIKE 'oauth_%'
        ORDER BY id`,
      [teamOrg.org_id],
    );
    expect(audit.rows).toEqual([
      { action: 'oauth_connection.create', user_id: user.id },
      { action: 'oauth_token.issue', user_id: publicClient.client_id },
    ]);
  });
});

describe('the token exchange', () => {
  it('gives a public client the connection’s token for its code and verifier; the token is stored only as a hash', async () => {
    const { code, verifier, connectionId } = await freshCode(publicClient);
    const answer = await exchange(publicClient, {
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toEqual({
      access_token: expect.stringMatching(/^gw_oauth_[0-9A-Za-z]{43}$/),
      token_type: 'Bearer',
      app_connection_id: connectionId,
    });
    const { rows } = await db.query(
      `SELECT org_id, app_id, kind, status, key_hash, key_hint FROM api_keys
        WHERE app_connection_id = $1`,
      [connectionId],
    );
    expect(rows).toEqual([
      {
        org_id: user.personal_org_id,
        app_id: maker.app_id,
        kind: 'oauth_token',
        status: 'active',
        key_hash: createHash('sha256').update(answer.body.access_token).digest('hex'),
        // the first ten characters, as every key's hint: one character of the secret
        key_hint: `${answer.body.access_token.slice(0, 10)}…`,
      },
    ]);
  });

  it('migration 044 trims the hint of a token stored before every hint was ten characters', async () => {
    const { code, verifier, connectionId } = await freshCode(publicClient);
    const answer = await exchange(publicClient, {
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
    });
    const token = answer.body.access_token;
    await db.query('UPDATE api_keys SET key_hint = $2 WHERE app_connection_id = $1', [
      connectionId,
      `${token.slice(0, 13)}…`,
    ]);
    // The API keys of the same app (the maker's): a migration of OAuth hints leaves them alone.
    const apiKeyHints = async () =>
      (
        await db.query<{ id: string; key_hint: string }>(
          `SELECT id, key_hint FROM api_keys WHERE kind = 'api_key'
              AND app_id = (SELECT app_id FROM api_keys WHERE app_connection_id = $1)
            ORDER BY id`,
          [connectionId],
        )
      ).rows;
    const before = await apiKeyHints();
    const migration = fileURLToPath(
      new URL('../src/db/migrations/044_oauth_token_hints.sql', import.meta.url),
    );
    await db.query(readFileSync(migration, 'utf8'));
    const { rows } = await db.query<{ key_hint: string }>(
      'SELECT key_hint FROM api_keys WHERE app_connection_id = $1',
      [connectionId],
    );
    expect(rows).toEqual([{ key_hint: `${token.slice(0, 10)}…` }]);
    expect(await apiKeyHints()).toEqual(before);
  });

  it('authenticates a confidential client by the secret in the form or by HTTP Basic, and refuses it otherwise (401 invalid_client)', async () => {
    const first = await freshCode(confidentialClient, WEB_CALLBACK);
    const inForm = await exchange(confidentialClient, {
      code: first.code,
      redirect_uri: WEB_CALLBACK,
      code_verifier: first.verifier,
    });
    expect(inForm.status).toBe(200);
    const second = await freshCode(confidentialClient, WEB_CALLBACK);
    const basic = await exchange(
      confidentialClient,
      { code: second.code, redirect_uri: WEB_CALLBACK, code_verifier: second.verifier },
      { id: confidentialClient.client_id, secret: confidentialClient.client_secret! },
    );
    expect(basic.status).toBe(200);
    expect(basic.body.access_token).toMatch(/^gw_oauth_/);

    const url = `${gateway.url}/oauth/token`;
    type Fields = Record<string, string>;
    const attempts: Array<
      (fields: Fields) => Promise<{ status: number; headers: Headers; body: OAuthError }>
    > = [
      (fields) =>
        postForm<OAuthError>(url, {
          grant_type: 'authorization_code',
          client_id: confidentialClient.client_id,
          ...fields,
        }),
      (fields) =>
        postForm<OAuthError>(url, {
          grant_type: 'authorization_code',
          client_id: confidentialClient.client_id,
          client_secret: `gw_client_secret_${'x'.repeat(43)}`,
          ...fields,
        }),
      (fields) => postForm<OAuthError>(url, { grant_type: 'authorization_code', ...fields }),
      (fields) =>
        postForm<OAuthError>(
          url,
          { grant_type: 'authorization_code', ...fields },
          { id: confidentialClient.client_id, secret: 'wrong' },
        ),
      (fields) =>
        postForm<OAuthError>(url, {
          grant_type: 'authorization_code',
          client_id: publicClient.client_id,
          client_secret: 'a public client has none',
          ...fields,
        }),
    ];
    for (const [index, attempt] of attempts.entries()) {
      const fresh = await freshCode(confidentialClient, WEB_CALLBACK);
      const fields = {
        code: fresh.code,
        redirect_uri: WEB_CALLBACK,
        code_verifier: fresh.verifier,
      };
      const refusal = await attempt(fields);
      expect(refusal.status, `attempt ${index}`).toBe(401);
      expect(refusal.body).toMatchObject({
        error: 'invalid_client',
        gw_code: 'gw_oauth_invalid_client',
      });
      expect(refusal.headers.get('cache-control')).toBe('no-store');
      if (index === 3) expect(refusal.headers.get('www-authenticate')).toMatch(/^Basic /);
      // the attempt spent the code, though its client was not authenticated: the right
      // request after it gets nothing (docs/decisions.md 276)
      const late = await exchange(confidentialClient, fields);
      expect(late.status, `attempt ${index}`).toBe(400);
      expect(late.body).toEqual({
        error: 'invalid_grant',
        error_description:
          'the authorization code was already presented; no token was issued from it',
        gw_code: 'gw_oauth_invalid_grant',
      });
      expect(await connectionRows([fresh.connectionId])).toEqual([]);
    }
  });

  it('spends a code presented in a JSON body or in the query string', async () => {
    const url = `${gateway.url}/oauth/token`;
    const sends = [
      (code: string) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            grant_type: 'authorization_code',
            client_id: publicClient.client_id,
            code,
          }),
        }),
      (code: string) =>
        fetch(`${url}?code=${encodeURIComponent(code)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            client_id: publicClient.client_id,
          }).toString(),
        }),
    ];
    for (const [index, send] of sends.entries()) {
      const fresh = await freshCode(publicClient);
      const refused = await send(fresh.code);
      expect(refused.status, `send ${index}`).toBe(400);
      const late = await exchange(publicClient, {
        code: fresh.code,
        redirect_uri: CALLBACK,
        code_verifier: fresh.verifier,
      });
      expect([late.status, late.body.error], `send ${index}`).toEqual([400, 'invalid_grant']);
    }
  });

  it('spends the query string’s code of a request refused before its body is read; an unread body’s code is not seen', async () => {
    const form = (fields: Record<string, string>) =>
      new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: publicClient.client_id,
        redirect_uri: CALLBACK,
        ...fields,
      }).toString();
    /** A form POST to /oauth/token, head written by hand: `lengths` are its length headers. */
    const post = (
      target: string,
      body: string,
      lengths: (bytes: number) => readonly string[],
      headers: readonly string[] = [],
    ) =>
      rawRequest(
        gateway.port,
        [
          `POST ${target} HTTP/1.1`,
          'Host: 127.0.0.1',
          'Content-Type: application/x-www-form-urlencoded',
          ...headers,
          ...lengths(Buffer.byteLength(body)),
        ].join('\r\n'),
        body,
      );
    const withCode = (code: string, query = '') =>
      `/oauth/token?code=${encodeURIComponent(code)}${query}`;
    const declared = (bytes: number) => [`Content-Length: ${bytes}`];
    const tooLarge = () => [`Content-Length: ${5 * 1024 * 1024}`];
    const refusals: Array<[string, number, string, (code: string) => Promise<RawAnswer>]> = [
      [
        'a body over the limit (declared)',
        413,
        'gw_body_too_large',
        (code) => post(withCode(code), 'grant_type=authorization_code', tooLarge),
      ],
      [
        'a header sent twice',
        400,
        'gw_invalid_request',
        (code) =>
          post(withCode(code), form({ code: 'not-this-one' }), declared, [
            'Content-Type: application/x-www-form-urlencoded',
          ]),
      ],
      [
        'a query parameter Postgres cannot store',
        400,
        'gw_invalid_request',
        (code) => post(withCode(code, '&x=%00'), form({}), declared),
      ],
      [
        'conflicting framing',
        400,
        'gw_invalid_request',
        (code) =>
          post(withCode(code), form({}), (bytes) => [
            `Content-Length: ${bytes}`,
            `Content-Length: ${bytes + 1}`,
          ]),
      ],
    ];
    for (const [name, status, gwCode, send] of refusals) {
      const fresh = await freshCode(publicClient);
      const refused = await send(fresh.code);
      expect(refused.status, name).toBe(status);
      expect(refused.head, name).toMatch(/\r\ncache-control: no-store(\r|$)/i);
      expect((JSON.parse(refused.body) as OAuthError).gw_code, name).toBe(gwCode);
      expect(refused.body, name).not.toContain(fresh.code);
      const late = await exchange(publicClient, {
        code: fresh.code,
        redirect_uri: CALLBACK,
        code_verifier: fresh.verifier,
      });
      expect([late.status, late.body.error_description], name).toEqual([
        400,
        'the authorization code was already presented; no token was issued from it',
      ]);
    }
    // A code only in a body that was too large to be read was never seen: it still works
    // (docs/decisions.md 292).
    const unread = await freshCode(publicClient);
    const unreadAnswer = await post(
      '/oauth/token',
      form({ code: unread.code, code_verifier: unread.verifier }),
      tooLarge,
    );
    expect(unreadAnswer.status).toBe(413);
    const exchanged = await exchange(publicClient, {
      code: unread.code,
      redirect_uri: CALLBACK,
      code_verifier: unread.verifier,
    });
    expect(exchanged.status).toBe(200);
  });

  it('refuses a replayed code, and revokes the token its first exchange issued', async () => {
    const { code, verifier, connectionId } = await freshCode(publicClient);
    const fields = { code, redirect_uri: CALLBACK, code_verifier: verifier };
    const first = await exchange(publicClient, fields);
    expect(first.status).toBe(200);
    const works = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chat(),
      bearer(first.body.access_token),
    );
    expect(works.status).toBe(200);
    const replay = await exchange(publicClient, fields);
    expect(replay.status).toBe(400);
    expect(replay.body).toMatchObject({
      error: 'invalid_grant',
      gw_code: 'gw_oauth_invalid_grant',
    });
    expect(replay.body.error_description).toMatch(/already used/);
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      chat(),
      bearer(first.body.access_token),
    );
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('gw_key_inactive');
    const { rows } = await db.query(
      `SELECT c.status AS connection, k.status AS token FROM app_connections c
         JOIN api_keys k ON k.app_connection_id = c.id WHERE c.id = $1`,
      [connectionId],
    );
    expect(rows).toEqual([{ connection: 'revoked', token: 'revoked' }]);
  });

  it('refuses a wrong verifier, a wrong redirect URI and another client; the code is spent by the attempt', async () => {
    const wrongVerifier = await freshCode(publicClient);
    const answer = await exchange(publicClient, {
      code: wrongVerifier.code,
      redirect_uri: CALLBACK,
      code_verifier: pkcePair().verifier,
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      error: 'invalid_grant',
      gw_code: 'gw_oauth_invalid_grant',
    });
    expect(answer.body.error_description).toMatch(/code_verifier/);
    const retried = await exchange(publicClient, {
      code: wrongVerifier.code,
      redirect_uri: CALLBACK,
      code_verifier: wrongVerifier.verifier,
    });
    expect(retried.status).toBe(400);
    // no token came of the first attempt, and the answer does not claim one was revoked
    expect(retried.body).toEqual({
      error: 'invalid_grant',
      error_description:
        'the authorization code was already presented; no token was issued from it',
      gw_code: 'gw_oauth_invalid_grant',
    });

    const wrongRedirect = await freshCode(confidentialClient, WEB_CALLBACK);
    const mismatch = await exchange(confidentialClient, {
      code: wrongRedirect.code,
      redirect_uri: CALLBACK, // registered too, but not the one of the request
      code_verifier: wrongRedirect.verifier,
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toMatchObject({
      error: 'invalid_grant',
      gw_code: 'gw_redirect_uri_mismatch',
    });

    const otherClient = await freshCode(publicClient);
    const stolen = await exchange(confidentialClient, {
      code: otherClient.code,
      redirect_uri: CALLBACK,
      code_verifier: otherClient.verifier,
    });
    expect(stolen.status).toBe(400);
    expect(stolen.body).toMatchObject({ error: 'invalid_grant' });
    expect(stolen.body.error_description).toMatch(/another client/);

    // a code that yielded no token made no connection: nothing can ever pay through it
    expect(
      await connectionRows([
        wrongVerifier.connectionId,
        wrongRedirect.connectionId,
        otherClient.connectionId,
      ]),
    ).toEqual([]);
  });

  it('spends a code on any request that presents it, malformed or not: the right request after it gets nothing', async () => {
    const url = `${gateway.url}/oauth/token`;
    const presenting: Array<[string, (code: string, verifier: string) => Promise<Response>]> = [
      [
        'no code_verifier',
        (code) =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              client_id: publicClient.client_id,
              code,
              redirect_uri: CALLBACK,
            }).toString(),
          }),
      ],
      [
        'no redirect_uri',
        (code, verifier) =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              client_id: publicClient.client_id,
              code,
              code_verifier: verifier,
            }).toString(),
          }),
      ],
      [
        'another grant_type',
        (code, verifier) =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'refresh_token',
              client_id: publicClient.client_id,
              code,
              redirect_uri: CALLBACK,
              code_verifier: verifier,
            }).toString(),
          }),
      ],
      [
        'a parameter sent twice (refused before the client is known)',
        (code, verifier) =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: `grant_type=authorization_code&client_id=${publicClient.client_id}&client_id=${publicClient.client_id}&code=${code}&redirect_uri=${encodeURIComponent(CALLBACK)}&code_verifier=${verifier}`,
          }),
      ],
      [
        'an unknown client',
        (code, verifier) =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              client_id: `gw_client_${'z'.repeat(24)}`,
              code,
              redirect_uri: CALLBACK,
              code_verifier: verifier,
            }).toString(),
          }),
      ],
    ];
    for (const [label, present] of presenting) {
      const { code, verifier, connectionId } = await freshCode(publicClient);
      const refused = await present(code, verifier);
      expect(refused.status, label).toBeGreaterThanOrEqual(400);
      expect(await redis.exists(codeKey(code)), label).toBe(0);
      const late = await exchange(publicClient, {
        code,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
      });
      expect(late.status, label).toBe(400);
      expect(late.body, label).toEqual({
        error: 'invalid_grant',
        error_description:
          'the authorization code was already presented; no token was issued from it',
        gw_code: 'gw_oauth_invalid_grant',
      });
      expect(await connectionRows([connectionId]), label).toEqual([]);
    }
  });

  it('refuses an expired or unknown code, and malformed requests, in RFC 6749’s shape', async () => {
    const { code, verifier, connectionId } = await freshCode(publicClient);
    // Redis key expiry is what ends a code: let it run out now.
    const key = `${prefix}:oauth-code:{${createHash('sha256').update(code).digest('hex')}}`;
    expect(await redis.pexpire(key, 1)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const expired = await exchange(publicClient, {
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
    });
    expect(expired.status).toBe(400);
    expect(expired.body).toEqual({
      error: 'invalid_grant',
      error_description: 'the authorization code is unknown or expired',
      gw_code: 'gw_oauth_invalid_grant',
    });
    // the approval left nothing active behind: no connection, none among the connected apps
    expect(await connectionRows([connectionId])).toEqual([]);
    const listed = await browser.get<{ data: { id: string; token_issued_at: string | null }[] }>(
      `/dashboard/api/orgs/${user.personal_org_id}/connected-apps?limit=200`,
    );
    expect(listed.body.data.filter((row) => row.token_issued_at === null)).toEqual([]);
    const unknown = await exchange(publicClient, {
      code: 'A'.repeat(43),
      redirect_uri: CALLBACK,
      code_verifier: verifier,
    });
    expect(unknown.body.error).toBe('invalid_grant');

    const cases: Array<[Record<string, string>, number, string]> = [
      [
        { grant_type: 'client_credentials', code, redirect_uri: CALLBACK, code_verifier: verifier },
        400,
        'unsupported_grant_type',
      ],
      [
        { grant_type: '', code, redirect_uri: CALLBACK, code_verifier: verifier },
        400,
        'invalid_request',
      ],
      [{ redirect_uri: CALLBACK, code_verifier: verifier }, 400, 'invalid_request'],
      [{ code, code_verifier: verifier }, 400, 'invalid_request'],
      [{ code, redirect_uri: CALLBACK }, 400, 'invalid_request'],
      [{ code, redirect_uri: CALLBACK, code_verifier: 'short' }, 400, 'invalid_request'],
    ];
    for (const [fields, status, error] of cases) {
      const answer = await postForm<OAuthError>(`${gateway.url}/oauth/token`, {
        grant_type: 'authorization_code',
        client_id: publicClient.client_id,
        ...fields,
      });
      expect(answer.status, JSON.stringify(fields)).toBe(status);
      expect(answer.body.error).toBe(error);
    }
    const json = await postJson<OAuthError>(`${gateway.url}/oauth/token`, {
      grant_type: 'authorization_code',
      client_id: publicClient.client_id,
    });
    expect(json.status).toBe(400);
    expect(json.body).toMatchObject({ error: 'invalid_request', gw_code: 'gw_invalid_request' });
    const twice = await fetch(`${gateway.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=authorization_code&code=a&code=b&client_id=${publicClient.client_id}`,
    });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as OAuthError).error_description).toBe('code: must be sent once');
  });
});

describe('inference with an OAuth token', () => {
  it('charges the connecting user’s wallet, never the app maker’s; the ledger equals the wallet change; records name the connection and the client', async () => {
    const token = await connectAndExchange(gateway.url, browser, confidentialClient, {
      redirectUri: WEB_CALLBACK,
    });
    const payerBefore = await walletBalanceNano(user.personal_org_id);
    const makerBefore = await walletBalanceNano(maker.org_id);
    const answers = [
      await postJson(`${gateway.url}/v1/chat/completions`, chat(), bearer(token.access_token)),
      await postJson(
        `${gateway.url}/v1/messages`,
        {
          model: 'vendor_a/claude-haiku-4-5',
          max_tokens: 30,
          messages: [{ role: 'user', content: 'hi' }],
        },
        { 'x-api-key': token.access_token, 'vendor-version': '2023-06-01' },
      ),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const requestIds = answers.map((answer) => answer.headers.get('x-request-id')!);
    const records = await eventually(async () => {
      const { rows } = await db.query<{
        org_id: string;
        app_id: string;
        app_connection_id: string;
        oauth_client_id: string;
        wallet_cost: string;
      }>(
        `SELECT org_id, app_id, app_connection_id, oauth_client_id, wallet_cost::text
           FROM usage_records WHERE request_id = ANY($1::uuid[])`,
        [requestIds],
      );
      return rows.length === 2 ? rows : undefined;
    });
    for (const record of records) {
      expect(record).toMatchObject({
        org_id: user.personal_org_id,
        app_id: maker.app_id,
        app_connection_id: token.app_connection_id,
        oauth_client_id: confidentialClient.client_id,
      });
    }
    const chargedNano = records.reduce(
      (sum, record) => sum + numericToNano(record.wallet_cost),
      0n,
    );
    expect(chargedNano).toBeGreaterThan(0n);
    expect(await walletBalanceNano(user.personal_org_id)).toBe(payerBefore - chargedNano);
    expect(await walletBalanceNano(maker.org_id)).toBe(makerBefore);
    // the wallet is what its ledger says: top-ups minus every wallet cost
    const { rows } = await db.query<{ funded: string; spent: string }>(
      `SELECT (SELECT sum(amount) FROM wallet_transactions WHERE org_id = $1)::text AS funded,
              (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1)::text AS spent`,
      [user.personal_org_id],
    );
    expect(await walletBalanceNano(user.personal_org_id)).toBe(
      numericToNano(rows[0]!.funded) - numericToNano(rows[0]!.spent),
    );
    const usage = await fetch(`${gateway.url}/inference-keys/usage`, {
      headers: bearer(token.access_token),
    });
    expect(usage.status).toBe(200);
  });

  it('refuses when the paying wallet cannot cover it, whatever the app maker holds', async () => {
    const payer = await runCliJson<{ id: string; personal_org_id: string }>(
      ['admin', 'create-user', '--email', uniqueEmail('broke'), '--password-stdin'],
      env,
      { stdin: TEST_PASSWORD },
    );
    const { rows } = await db.query<{ email: string }>(
      'SELECT email FROM dashboard_users WHERE id = $1',
      [payer.id],
    );
    const broke = await signInTo(gateway, rows[0]!.email);
    const token = await connectAndExchange(gateway.url, broke, publicClient);
    const answer = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      chat(),
      bearer(token.access_token),
    );
    expect(answer.status).toBe(402);
    expect(answer.body.error.code).toBe('gw_reservation_insufficient_balance');
  });

  it('applies the connection’s and the paying organization’s caps, and attributes product users within the paying organization only', async () => {
    const token = await connectAndExchange(gateway.url, browser, publicClient);
    // The app maker's own product user "alice", made with its API key…
    const own = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { ...chat(), user: 'alice' },
      bearer(maker.api_key),
    );
    expect(own.status).toBe(200);
    // …is not the "alice" the OAuth connection's requests attribute: that one is the payer's.
    const viaOAuth = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { ...chat(), user: 'alice', metadata: { product_user: { display_name: 'Alice (payer)' } } },
      bearer(token.access_token),
    );
    expect(viaOAuth.status).toBe(200);
    const { rows } = await db.query(
      `SELECT org_id, display_name, last_app_connection_id FROM product_users
        WHERE app_id = $1 AND external_user_id = 'alice' ORDER BY org_id = $2 DESC`,
      [maker.app_id, maker.org_id],
    );
    expect(rows).toEqual([
      { org_id: maker.org_id, display_name: '', last_app_connection_id: maker.app_connection_id },
      {
        org_id: user.personal_org_id,
        display_name: 'Alice (payer)',
        last_app_connection_id: token.app_connection_id,
      },
    ]);
    await runCliJson(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        token.app_connection_id,
        '--amount',
        '0.000000001',
      ],
      env,
    );
    // the CLI's cap reaches the gateway by pub/sub (it has the connection's rules cached)
    const capped = await firstNot200(() =>
      postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat(), bearer(token.access_token)),
    );
    expect(capped.status).toBe(403);
    expect(capped.body.error.code).toBe('gw_cap_exceeded');
    // and the paying organization's own cap
    const teamToken = await connectAndExchange(gateway.url, browser, publicClient, {
      orgId: teamOrg.org_id,
    });
    await runCliJson(
      ['cap', 'set', '--scope', 'org', '--org-id', teamOrg.org_id, '--amount', '0.000000001'],
      env,
    );
    const orgCapped = await firstNot200(() =>
      postJson<ErrorBody>(
        `${gateway.url}/v1/chat/completions`,
        chat(),
        bearer(teamToken.access_token),
      ),
    );
    expect(orgCapped.status).toBe(403);
    expect(orgCapped.body.error.code).toBe('gw_cap_exceeded');
    expect(orgCapped.body.error.message).toMatch(/organization/);
  });

  it('cannot get API keys issued or rotated on an OAuth connection', async () => {
    const token = await connectAndExchange(gateway.url, browser, publicClient);
    const issued = await runCli(
      ['api-key', 'create', '--app-connection-id', token.app_connection_id],
      env,
    );
    expect(issued.code).toBe(2);
    expect(JSON.parse(issued.stderr).error.code).toBe('gw_conflict');
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM api_keys WHERE app_connection_id = $1',
      [token.app_connection_id],
    );
    const rotated = await runCli(['api-key', 'rotate', '--id', rows[0]!.id], env);
    expect(rotated.code).toBe(2);
    expect(JSON.parse(rotated.stderr).error.code).toBe('gw_conflict');
  });
});

describe('POST /oauth/revoke', () => {
  it('answers revoked true once, then false; the token and its connection are revoked', async () => {
    const token = await connectAndExchange(gateway.url, browser, confidentialClient, {
      redirectUri: WEB_CALLBACK,
    });
    const revoke = (basic?: { id: string; secret: string }) =>
      postForm<{ revoked: boolean }>(
        `${gateway.url}/oauth/revoke`,
        basic
          ? { token: token.access_token }
          : {
              token: token.access_token,
              client_id: confidentialClient.client_id,
              client_secret: confidentialClient.client_secret!,
            },
        basic,
      );
    const first = await revoke();
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ revoked: true });
    const again = await revoke({
      id: confidentialClient.client_id,
      secret: confidentialClient.client_secret!,
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ revoked: false });
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      chat(),
      bearer(token.access_token),
    );
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('gw_key_inactive');
    const { rows } = await db.query(
      `SELECT c.status AS connection, k.status AS token FROM app_connections c
         JOIN api_keys k ON k.app_connection_id = c.id WHERE c.id = $1`,
      [token.app_connection_id],
    );
    expect(rows).toEqual([{ connection: 'revoked', token: 'revoked' }]);
  });

  it('answers false for unknown tokens and for another client’s token (which keeps working); refuses bad client authentication', async () => {
    const token = await connectAndExchange(gateway.url, browser, publicClient);
    const revokeAs = (fields: Record<string, string>, basic?: { id: string; secret: string }) =>
      postForm<{ revoked: boolean } & OAuthError>(`${gateway.url}/oauth/revoke`, fields, basic);
    const confidential = {
      client_id: confidentialClient.client_id,
      client_secret: confidentialClient.client_secret!,
    };
    expect((await revokeAs({ token: token.access_token, ...confidential })).body).toEqual({
      revoked: false,
    });
    expect((await revokeAs({ token: `gw_oauth_${'Z'.repeat(43)}`, ...confidential })).body).toEqual(
      { revoked: false },
    );
    expect((await revokeAs({ token: maker.api_key, ...confidential })).body).toEqual({
      revoked: false,
    });
    expect((await revokeAs({ token: 'anything', client_id: publicClient.client_id })).body).toEqual(
      { revoked: false },
    );
    const works = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chat(),
      bearer(token.access_token),
    );
    expect(works.status).toBe(200);

    const badAuth = [
      await revokeAs({ token: token.access_token, client_id: confidentialClient.client_id }),
      await revokeAs({
        token: token.access_token,
        client_id: confidentialClient.client_id,
        client_secret: 'nope',
      }),
      await revokeAs({ token: token.access_token }),
      await revokeAs({ token: token.access_token, client_id: 'gw_client_unknown000000000000' }),
      await revokeAs({ token: token.access_token }, { id: publicClient.client_id, secret: 'x' }),
    ];
    for (const answer of badAuth) {
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('invalid_client');
    }
    const missing = await revokeAs({ client_id: publicClient.client_id });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    // and it is still the public client's to revoke
    expect(
      (await revokeAs({ token: token.access_token, client_id: publicClient.client_id })).body,
    ).toEqual({
      revoked: true,
    });
  });
});

describe('/openapi.json', () => {
  it('lists the OAuth routes with their form bodies, client authentication and RFC 6749 errors', async () => {
    const document = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            security?: unknown;
            requestBody?: { content: Record<string, unknown> };
            responses: Record<string, { description: string }>;
          }
        >
      >;
    };
    expect(document.paths['/oauth/authorize']!.get).toBeDefined();
    const decision = document.paths['/oauth/authorize']!.post!;
    expect(Object.keys(decision.requestBody!.content)).toEqual([
      'application/x-www-form-urlencoded',
    ]);
    const token = document.paths['/oauth/token']!.post!;
    expect(token.security).toEqual([{ oauthClientBasic: [] }, {}]);
    expect(token.responses['401']!.description).toContain('gw_oauth_invalid_client');
    expect(token.responses['400']!.description).toContain('gw_oauth_invalid_grant');
    expect(document.paths['/oauth/revoke']!.post).toBeDefined();
    expect(document.paths['/dashboard/api/orgs/{org_id}/connected-apps']!.get).toBeDefined();
  });
});
