// An OAuth app and a user's browser for tests: PKCE pairs, the authorization request, the
// consent page read as a browser reads it (its form's fields, the CSRF token among them), the
// user's answer with the session cookie, and the app's token exchange and revocation — all
// over real HTTP with redirects not followed, so every Location is checked.
import { createHash, randomBytes } from 'node:crypto';
import type { DashboardClient } from './dashboard.js';
import { runCliJson } from './processes.js';

export interface Pkce {
  readonly verifier: string;
  readonly challenge: string;
}

/** A verifier (43+ unreserved characters) and its S256 challenge, as RFC 7636 describes. */
export function pkcePair(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

export interface RegisteredClient {
  readonly client_id: string;
  readonly client_secret?: string;
  readonly redirect_uris: string[];
}

/** `gw oauth-client create` (the CLI the issue shows). */
export function createOAuthClient(
  env: Record<string, string>,
  appId: string,
  redirectUris: readonly string[],
  options: { public?: boolean; name?: string } = {},
): Promise<RegisteredClient> {
  return runCliJson<RegisteredClient>(
    [
      'oauth-client',
      'create',
      '--app-id',
      appId,
      '--name',
      options.name ?? 'Test app',
      ...redirectUris.flatMap((uri) => ['--redirect-uri', uri]),
      ...(options.public ? ['--public'] : []),
    ],
    env,
  );
}

export interface AuthorizationRequest {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly state?: string;
  readonly challenge?: string;
  readonly method?: string;
  readonly responseType?: string;
}

export function authorizeQuery(request: AuthorizationRequest): string {
  return new URLSearchParams({
    response_type: request.responseType ?? 'code',
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    ...(request.state !== undefined && { state: request.state }),
    ...(request.challenge !== undefined && { code_challenge: request.challenge }),
    code_challenge_method: request.method ?? 'S256',
  }).toString();
}

export interface RawAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly location: string | null;
}

async function raw(response: Response): Promise<RawAnswer> {
  return {
    status: response.status,
    headers: response.headers,
    text: await response.text(),
    location: response.headers.get('location'),
  };
}

/** GET /oauth/authorize as a browser would (cookie if signed in), redirects not followed. */
export async function getAuthorize(
  baseUrl: string,
  query: string,
  options: { cookie?: string; accept?: string } = {},
): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    accept: options.accept ?? 'text/html,application/xhtml+xml,*/*;q=0.8',
  };
  if (options.cookie) headers.cookie = options.cookie;
  return raw(await fetch(`${baseUrl}/oauth/authorize?${query}`, { headers, redirect: 'manual' }));
}

/** The named fields of the consent page's form, and its organization choices. */
export interface ConsentForm {
  readonly fields: Record<string, string>;
  readonly orgOptions: string[];
}

const decodeEntities = (text: string): string =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The consent page's monthly-cap field: its value as the page fills it in (empty: none). */
export function readConsentCap(html: string): string | undefined {
  const value = /<input id="cap_amount" name="cap_amount" [^>]*value="([^"]*)"/.exec(html)?.[1];
  return value === undefined ? undefined : decodeEntities(value);
}

export function readConsentForm(html: string): ConsentForm {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) {
    fields[match[1]!] = decodeEntities(match[2]!);
  }
  const select = /<select id="org_id" name="org_id"[^>]*>(.*?)<\/select>/s.exec(html)?.[1] ?? '';
  const orgOptions = [...select.matchAll(/<option value="([^"]*)"/g)].map((found) =>
    decodeEntities(found[1]!),
  );
  return { fields, orgOptions };
}

/**
 * The link back to the app on the gateway's page for an authorization request with a bad
 * parameter (the error response the user may follow), or undefined when there is none.
 */
export function readErrorPageLink(html: string): string | undefined {
  const href = /<a id="back-to-app" href="([^"]*)"/.exec(html)?.[1];
  return href === undefined ? undefined : decodeEntities(href);
}

/** POST /oauth/authorize, form-encoded, with the session cookie and the gateway's Origin. */
export async function postDecision(
  client: DashboardClient,
  fields: Readonly<Record<string, string>>,
  options: { origin?: string | null; accept?: string } = {},
): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: options.accept ?? 'text/html',
  };
  if (client.cookie) headers.cookie = client.cookie;
  const origin = options.origin === undefined ? client.origin : options.origin;
  if (origin !== null) headers.origin = origin;
  return raw(
    await fetch(`${client.baseUrl}/oauth/authorize`, {
      method: 'POST',
      headers,
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    }),
  );
}

/** The parameters the answer's Location carries, and the URI they were added to. */
export function redirectParams(location: string): { base: string; params: URLSearchParams } {
  const url = new URL(location);
  const params = url.searchParams;
  return { base: `${url.origin}${url.pathname}`, params };
}

/**
 * A signed-in user connects the app: reads the consent page and answers it. Resolves with
 * the answer (302 to the redirect URI, normally).
 */
export async function connect(
  user: DashboardClient,
  request: AuthorizationRequest,
  answer: { decision?: 'approve' | 'deny'; orgId?: string; capAmount?: string } = {},
  options: { accept?: string } = {},
): Promise<RawAnswer> {
  const page = await getAuthorize(user.baseUrl, authorizeQuery(request), { cookie: user.cookie! });
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${page.text}`);
  const form = readConsentForm(page.text);
  return postDecision(
    user,
    {
      ...form.fields,
      org_id: answer.orgId ?? form.orgOptions[0]!,
      decision: answer.decision ?? 'approve',
      ...(answer.capAmount !== undefined && { cap_amount: answer.capAmount }),
    },
    options,
  );
}

export interface FormAnswer<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

/** A form-encoded POST (the token and revocation endpoints), optionally with HTTP Basic. */
export async function postForm<T = Record<string, unknown>>(
  url: string,
  fields: Readonly<Record<string, string>>,
  basic?: { id: string; secret: string },
): Promise<FormAnswer<T>> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
  };
  if (basic) {
    const pair = `${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  }
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: new URLSearchParams(fields).toString(),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(await response.text()) as T,
  };
}

export interface TokenAnswer {
  readonly access_token: string;
  readonly token_type: string;
  readonly app_connection_id: string;
}

/** Approves and exchanges the code: the app's token (throws if any step is refused). */
export async function connectAndExchange(
  baseUrl: string,
  user: DashboardClient,
  client: RegisteredClient,
  options: { orgId?: string; redirectUri?: string; capAmount?: string } = {},
): Promise<TokenAnswer> {
  const pkce = pkcePair();
  const redirectUri = options.redirectUri ?? client.redirect_uris[0]!;
  const answer = await connect(
    user,
    { clientId: client.client_id, redirectUri, state: 's', challenge: pkce.challenge },
    {
      ...(options.orgId !== undefined && { orgId: options.orgId }),
      ...(options.capAmount !== undefined && { capAmount: options.capAmount }),
    },
  );
  const code = answer.location ? new URL(answer.location).searchParams.get('code') : null;
  if (!code) throw new Error(`no code in ${answer.status} ${answer.location}`);
  const token = await postForm<TokenAnswer>(`${baseUrl}/oauth/token`, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    code_verifier: pkce.verifier,
    client_id: client.client_id,
    ...(client.client_secret !== undefined && { client_secret: client.client_secret }),
  });
  if (token.status !== 200) throw new Error(`token exchange answered ${token.status}`);
  return token.body;
}
