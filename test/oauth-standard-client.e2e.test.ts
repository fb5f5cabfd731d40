// A third-party app that integrates with gw through a standard OAuth client library
// (oauth4webapi) and nothing written for gw: it discovers the server (RFC 8414), builds the
// authorization request with PKCE S256 and a state, checks the callback (state and `iss`,
// RFC 9207), exchanges the code with each client authentication the metadata offers, calls a
// model through the openai client with the token, and revokes it (RFC 7009). The user's side is
// a signed-in dashboard browser approving on the consent page. Against a real gateway, Redis
// and Postgres. The library refuses plain-HTTP servers unless told (`allowInsecureRequests`):
// test gateways listen on loopback HTTP.
import * as oauth from 'oauth4webapi';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import {
  createOAuthClient,
  getAuthorize,
  postDecision,
  readConsentForm,
  readErrorPageLink,
  type RegisteredClient,
} from './support/oauth.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('oauth-lib');
let gateway: GatewayProcess;
let maker: SeededOrg;
let user: { id: string; personal_org_id: string };
let browser: DashboardClient;
let confidentialClient: RegisteredClient;
let publicClient: RegisteredClient;
/** The server as the library discovered it. */
let as: oauth.AuthorizationServer;

const CALLBACK = 'http://127.0.0.1:9/callback';
/** The test gateway is plain HTTP on loopback; a real one is https and needs no option. */
const insecure = { [oauth.allowInsecureRequests]: true } as const;

type ClientAuthentication = 'client_secret_basic' | 'client_secret_post' | 'none';

/** The library's client and its authentication, for a registered client and a method. */
function libraryClient(
  registered: RegisteredClient,
  method: ClientAuthentication,
): { client: oauth.Client; auth: oauth.ClientAuth } {
  const client: oauth.Client = { client_id: registered.client_id };
  if (method === 'none') return { client, auth: oauth.None() };
  const secret = registered.client_secret!;
  return {
    client,
    auth:
      method === 'client_secret_basic'
        ? oauth.ClientSecretBasic(secret)
        : oauth.ClientSecretPost(secret),
  };
}

/** What the app keeps between sending the user away and the callback. */
interface PendingAuthorization {
  readonly url: URL;
  readonly verifier: string;
  readonly state: string;
}

/** The authorization request the app sends the browser to, built from the discovered metadata. */
async function authorizationRequest(client: oauth.Client): Promise<PendingAuthorization> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', CALLBACK);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  return { url, verifier, state };
}

/** The signed-in user opens the authorization URL and answers the consent page: the callback. */
async function answerInBrowser(url: URL, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
  const page = await getAuthorize(url.origin, url.search.slice(1), { cookie: browser.cookie! });
  expect(page.status).toBe(200);
  const form = readConsentForm(page.text);
  const answer = await postDecision(browser, {
    ...form.fields,
    org_id: user.personal_org_id,
    decision,
  });
  expect(answer.status).toBe(302);
  return new URL(answer.location!);
}

/** Approval, the callback's checks and the code exchange, as the library does them. */
async function connectApp(
  client: oauth.Client,
  auth: oauth.ClientAuth,
): Promise<{ tokens: oauth.TokenEndpointResponse; callback: URLSearchParams; verifier: string }> {
  const pending = await authorizationRequest(client);
  const callback = oauth.validateAuthResponse(
    as,
    client,
    await answerInBrowser(pending.url),
    pending.state,
  );
  const tokens = await exchangeCode(client, auth, callback, pending.verifier);
  return { tokens, callback, verifier: pending.verifier };
}

/** The code exchange as the app makes it: its token request, read by the library. */
async function exchangeCode(
  client: oauth.Client,
  auth: oauth.ClientAuth,
  callback: URLSearchParams,
  verifier: string,
): Promise<oauth.TokenEndpointResponse> {
  return oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(
      as,
      client,
      auth,
      callback,
      CALLBACK,
      verifier,
      insecure,
    ),
  );
}

const chat = (token: string) =>
  new OpenAI({
    baseURL: `${gateway.url}/v1`,
    apiKey: token,
    maxRetries: 0,
  }).chat.completions.create({
    model: 'vendor_b/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hello from a third-party app. mock:output_tokens=3' }],
    max_tokens: 10,
  });

beforeAll(async () => {
  // A developer's local gateway: plain HTTP, so its own origin (the issuer) is http://.
  gateway = await startGateway({ ...env, DASHBOARD_INSECURE_COOKIES: 'true' });
  maker = await seed(env, ['--name', 'Third Party Inc', '--wallet', '5.00']);
  const email = uniqueEmail('oauth-lib-user');
  user = await runCliJson(['admin', 'create-user', '--email', email, '--password-stdin'], env, {
    stdin: TEST_PASSWORD,
  });
  await runCliJson(['wallet', 'topup', '--org-id', user.personal_org_id, '--amount', '5.00'], env);
  browser = new DashboardClient(gateway.url, gateway.url);
  const login = await browser.login(email, TEST_PASSWORD);
  expect(login.status).toBe(200);
  [confidentialClient, publicClient] = await Promise.all([
    createOAuthClient(env, maker.app_id, [CALLBACK], { name: 'Library app' }),
    createOAuthClient(env, maker.app_id, [CALLBACK], { public: true, name: 'Library CLI' }),
  ]);
  const issuer = new URL(gateway.url);
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
});

afterAll(async () => {
  await gateway?.stop();
});

describe('discovery (RFC 8414)', () => {
  it('serves the metadata at /.well-known/oauth-authorization-server, its issuer the gateway’s origin', async () => {
    expect(as).toEqual({
      issuer: gateway.url,
      authorization_endpoint: `${gateway.url}/oauth/authorize`,
      token_endpoint: `${gateway.url}/oauth/token`,
      revocation_endpoint: `${gateway.url}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: [
        'client_secret_basic',
        'client_secret_post',
        'none',
      ],
      authorization_response_iss_parameter_supported: true,
    });
    const served = await fetch(`${gateway.url}/.well-known/oauth-authorization-server`);
    expect(served.headers.get('content-type')).toBe('application/json');
  });

  it('is declared like every route: in /openapi.json, in the oauth section, with its schema', async () => {
    const document = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            tags: string[];
            security?: unknown;
            responses: Record<
              string,
              { content?: { 'application/json': { schema: { required?: string[] } } } }
            >;
          }
        >
      >;
    };
    const metadata = document.paths['/.well-known/oauth-authorization-server']!.get!;
    expect(metadata.tags).toEqual(['oauth']);
    expect(metadata.security).toBeUndefined();
    expect(metadata.responses['200']!.content!['application/json'].schema.required).toEqual(
      expect.arrayContaining(['issuer', 'token_endpoint', 'code_challenge_methods_supported']),
    );
  });
});

describe.each([
  ['client_secret_basic', 'confidential'],
  ['client_secret_post', 'confidential'],
  ['none', 'public'],
] as const)('the whole flow with %s (a %s client)', (method, kind) => {
  const registered = () => (kind === 'public' ? publicClient : confidentialClient);

  it('approves, checks the callback, exchanges the code, calls a model with the token, revokes it', async () => {
    const { client, auth } = libraryClient(registered(), method);
    const pending = await authorizationRequest(client);
    const callbackUrl = await answerInBrowser(pending.url);
    expect(`${callbackUrl.origin}${callbackUrl.pathname}`).toBe(CALLBACK);
    expect(callbackUrl.searchParams.get('iss')).toBe(gateway.url);
    const callback = oauth.validateAuthResponse(as, client, callbackUrl, pending.state);

    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      auth,
      callback,
      CALLBACK,
      pending.verifier,
      insecure,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    // No expires_in, refresh_token or scope: the token lasts until revoked (decision 140).
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^gw_oauth_[0-9A-Za-z]+$/),
      token_type: 'bearer',
      app_connection_id: expect.stringMatching(/^conn_/),
    });
    const connection = await db.query(
      'SELECT org_id, oauth_client_id, status FROM app_connections WHERE id = $1',
      [tokens.app_connection_id],
    );
    expect(connection.rows).toEqual([
      { org_id: user.personal_org_id, oauth_client_id: client.client_id, status: 'active' },
    ]);

    const { data, response: answered } = await chat(tokens.access_token).withResponse();
    expect(data.choices[0]!.message.role).toBe('assistant');
    expect(data.usage!.completion_tokens).toBe(3);
    // paid by the user who approved (their personal organization), never by the app's maker
    expect(
      await ledgerRow(
        db,
        answered.headers.get('x-request-id'),
        'org_id, app_connection_id, oauth_client_id',
      ),
    ).toEqual({
      org_id: user.personal_org_id,
      app_connection_id: tokens.app_connection_id,
      oauth_client_id: client.client_id,
    });

    const revocation = await oauth.revocationRequest(
      as,
      client,
      auth,
      tokens.access_token,
      insecure,
    );
    expect(revocation.status).toBe(200);
    expect(await oauth.processRevocationResponse(revocation)).toBeUndefined();
    const revoked = await db.query('SELECT status FROM app_connections WHERE id = $1', [
      tokens.app_connection_id,
    ]);
    expect(revoked.rows).toEqual([{ status: 'revoked' }]);
    const refused = await chat(tokens.access_token).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(refused).toMatchObject({ status: 401, code: 'gw_key_inactive' });
  });
});

describe('gw’s error answers, as the library reports them', () => {
  it('a replayed code: ResponseBodyError invalid_grant, and the token of its first exchange is revoked (RFC 6749 4.1.2)', async () => {
    const { client, auth } = libraryClient(confidentialClient, 'client_secret_post');
    const { tokens, callback, verifier } = await connectApp(client, auth);
    const replay = await exchangeCode(client, auth, callback, verifier).catch(
      (error: unknown) => error,
    );
    expect(replay).toBeInstanceOf(oauth.ResponseBodyError);
    expect(replay).toMatchObject({
      status: 400,
      error: 'invalid_grant',
      cause: { error: 'invalid_grant', gw_code: 'gw_oauth_invalid_grant' },
    });
    expect((replay as oauth.ResponseBodyError).response.headers.get('cache-control')).toBe(
      'no-store',
    );
    const refused = await chat(tokens.access_token).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 401, code: 'gw_key_inactive' });
    // revoking what is already revoked is still a success for the library (RFC 7009 2.2)
    expect(
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, client, auth, tokens.access_token, insecure),
      ),
    ).toBeUndefined();
  });

  it('a wrong verifier: invalid_grant', async () => {
    const { client, auth } = libraryClient(publicClient, 'none');
    const pending = await authorizationRequest(client);
    const callback = oauth.validateAuthResponse(
      as,
      client,
      await answerInBrowser(pending.url),
      pending.state,
    );
    const refused = await exchangeCode(
      client,
      auth,
      callback,
      oauth.generateRandomCodeVerifier(),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(oauth.ResponseBodyError);
    expect(refused).toMatchObject({ status: 400, error: 'invalid_grant' });
  });

  it('a wrong secret: the HTTP Basic challenge (WWW-Authenticate) with Basic, invalid_client in the form', async () => {
    const wrong = { ...confidentialClient, client_secret: `gw_client_secret_${'x'.repeat(43)}` };
    const basic = libraryClient(wrong, 'client_secret_basic');
    const pending = await authorizationRequest(basic.client);
    const callback = oauth.validateAuthResponse(
      as,
      basic.client,
      await answerInBrowser(pending.url),
      pending.state,
    );
    const challenged = await exchangeCode(
      basic.client,
      basic.auth,
      callback,
      pending.verifier,
    ).catch((error: unknown) => error);
    expect(challenged).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(challenged).toMatchObject({
      status: 401,
      cause: [{ scheme: 'basic', parameters: { realm: 'gw', charset: 'UTF-8' } }],
    });

    const post = libraryClient(wrong, 'client_secret_post');
    const revocation = await oauth
      .processRevocationResponse(
        await oauth.revocationRequest(as, post.client, post.auth, 'gw_oauth_unknown', insecure),
      )
      .catch((error: unknown) => error);
    expect(revocation).toBeInstanceOf(oauth.ResponseBodyError);
    expect(revocation).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  it('a denial: AuthorizationResponseError access_denied (its iss and state checked first)', async () => {
    const { client } = libraryClient(publicClient, 'none');
    const pending = await authorizationRequest(client);
    const callbackUrl = await answerInBrowser(pending.url, 'deny');
    expect(callbackUrl.searchParams.get('iss')).toBe(gateway.url);
    let denied: unknown;
    try {
      oauth.validateAuthResponse(as, client, callbackUrl, pending.state);
    } catch (error) {
      denied = error;
    }
    expect(denied).toBeInstanceOf(oauth.AuthorizationResponseError);
    expect(denied).toMatchObject({ error: 'access_denied' });
  });
});

describe('PUBLIC_ORIGIN', () => {
  const publicOrigin = 'https://gw.example.test';

  it('is an origin only: normalised as URL writes it; a path, query or user name is refused', () => {
    expect(loadConfig({ PUBLIC_ORIGIN: 'https://GW.Example.test:443/' }).PUBLIC_ORIGIN).toBe(
      publicOrigin,
    );
    expect(
      loadConfig({ PUBLIC_ORIGIN: 'http://127.0.0.1:8080', DASHBOARD_INSECURE_COOKIES: 'true' })
        .PUBLIC_ORIGIN,
    ).toBe('http://127.0.0.1:8080');
    expect(loadConfig({}).PUBLIC_ORIGIN).toBeUndefined();
    for (const value of [
      'https://gw.example.test/gw',
      // URL reads a backslash as a slash: a path all the same
      'https://gw.example.test\\gw',
      'https://gw.example.test?x=1',
      'https://gw.example.test#top',
      'https://user@gw.example.test',
      'ftp://gw.example.test',
      'gw.example.test',
    ]) {
      expect(() => loadConfig({ PUBLIC_ORIGIN: value }), value).toThrow(
        /PUBLIC_ORIGIN: must be scheme:\/\/host\[:port\] only/,
      );
    }
  });

  it('is https unless the gateway serves plain HTTP: an http issuer and write origin are refused at boot', () => {
    // RFC 8414: the issuer is an https URL; the own origin is http only under insecure cookies
    expect(() => loadConfig({ PUBLIC_ORIGIN: 'http://gw.example.test' })).toThrow(
      /PUBLIC_ORIGIN: http:\/\/ only for a plain-HTTP gateway \(DASHBOARD_INSECURE_COOKIES=true\)/,
    );
    expect(
      loadConfig({ PUBLIC_ORIGIN: 'https://gw.example.test', DASHBOARD_INSECURE_COOKIES: 'true' })
        .PUBLIC_ORIGIN,
    ).toBe(publicOrigin);
  });
  let behindProxy: GatewayProcess;

  beforeAll(async () => {
    // The origin users reach it at, whatever Host the gateway itself sees (a proxy in front).
    behindProxy = await startGateway({ ...env, PUBLIC_ORIGIN: `${publicOrigin}/` });
  });

  afterAll(async () => {
    await behindProxy?.stop();
  });

  it('is the issuer and the base of the endpoints; every authorization response names it as iss', async () => {
    const issuer = new URL(publicOrigin);
    // fetched from where the test reaches it, checked against the issuer the app configured
    const proxied = await oauth.processDiscoveryResponse(
      issuer,
      await fetch(`${behindProxy.url}/.well-known/oauth-authorization-server`),
    );
    expect(proxied).toMatchObject({
      issuer: publicOrigin,
      authorization_endpoint: `${publicOrigin}/oauth/authorize`,
      token_endpoint: `${publicOrigin}/oauth/token`,
      revocation_endpoint: `${publicOrigin}/oauth/revoke`,
    });
    // An error for the redirect URI (no PKCE; the gateway's page links to it, decision 366)
    // carries it too (RFC 9207 section 2).
    const client: oauth.Client = { client_id: publicClient.client_id };
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: CALLBACK,
      state: 'st',
    });
    const answer = await getAuthorize(behindProxy.url, query.toString());
    expect(answer.status).toBe(400);
    const callback = new URL(readErrorPageLink(answer.text)!);
    expect(callback.searchParams.get('iss')).toBe(publicOrigin);
    expect(callback.searchParams.get('error')).toBe('invalid_request');
    expect(() => oauth.validateAuthResponse(proxied, client, callback, 'st')).toThrow(
      oauth.AuthorizationResponseError,
    );
    // An app that sent the user to another server sees the mix-up (RFC 9207).
    expect(() => oauth.validateAuthResponse(as, client, callback, 'st')).toThrow(
      /unexpected "iss" \(issuer\) response parameter value/,
    );
  });

  it("is the dashboard's own origin too: its writes pass the Origin check, others do not", async () => {
    const signIn = (origin: string) =>
      fetch(`${behindProxy.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify({ email: 'nobody@example.test', password: 'not the password' }),
      });
    // past the Origin check: the sign-in itself fails
    const fromPublic = await signIn(publicOrigin);
    expect(fromPublic.status).toBe(401);
    const elsewhere = await signIn('https://elsewhere.example.test');
    expect(elsewhere.status).toBe(403);
    expect(((await elsewhere.json()) as { error: { code: string } }).error.code).toBe(
      'gw_origin_not_allowed',
    );
  });
});
