// POST /oauth/token (form-encoded, RFC 6749 section 4.1.3 with PKCE, RFC 7636 section 4.6):
// the app exchanges a code for the connection's inference token. The client authenticates
// (client_id; a confidential client's secret in the form or as HTTP Basic). Errors are RFC
// 6749's `{"error", "error_description"}` (plus the gateway's `gw_code`), never cached. A
// presented code is spent whatever fails: the request, the client's authentication, the grant.
import { z } from 'zod';
import type { CapInvalidation } from '../../admin/caps.js';
import { gwError, type GwError } from '../../errors.js';
import { oauthHeaders } from '../../http/respond.js';
import { exchange, spendCode } from '../../oauth/connections.js';
import { verifierProblem } from '../../oauth/pkce.js';
import { answer, declareRoute } from '../framework/declaration.js';
import type { OAuthDeps } from './deps.js';

const parameter = z.string().max(4096).optional();

const tokenRequestSchema = z.object({
  grant_type: parameter.describe('authorization_code'),
  code: parameter,
  redirect_uri: parameter.describe('the redirect_uri of the authorization request'),
  code_verifier: parameter.describe('the PKCE verifier whose S256 was the code_challenge'),
  client_id: parameter,
  client_secret: parameter.describe('confidential clients (or HTTP Basic)'),
});

/** More `code` fields than this in one refused form are not worth a Redis call each. */
const MAX_PRESENTED_CODES = 4;

const tokenSchema = z.object({
  access_token: z.string().describe('gw_oauth_…: use it as a Bearer API key on /v1'),
  token_type: z.literal('Bearer'),
  app_connection_id: z.string(),
});

export const tokenRoute = declareRoute({
  method: 'POST',
  path: '/oauth/token',
  summary: "Exchanges an authorization code (with its PKCE verifier) for the connection's token",
  caller: { kind: 'oauth_client' },
  body: tokenRequestSchema,
  bodyEncoding: 'form',
  answerCarriesSecret: true,
  responses: { 200: { description: 'the inference token', schema: tokenSchema } },
  errors: [
    'gw_oauth_unsupported_grant_type',
    'gw_oauth_invalid_grant',
    'gw_redirect_uri_mismatch',
    'gw_unavailable',
  ],
  errorFlavor: 'oauth',
  // A code is one attempt, whatever fails: a request refused for its form, its client
  // authentication or before its body was read spends the code it presents too, as far as
  // it was read: the query's always, the body's if it was read (decisions 276 and 292).
  async onRefused({ request, rawBody }, deps: OAuthDeps) {
    await spendPresentedCodes(deps, request.query, rawBody ?? undefined);
    return undefined;
  },
  async handler({ request, caller, body }, deps: OAuthDeps & { readonly caps: CapInvalidation }) {
    // A code in the query string is presented too, and never where RFC 6749 takes it from.
    await spendPresentedCodes(deps, request.query);
    const problem = requestProblem(body);
    if (!body.code) return problem ?? gwError('gw_invalid_request', 'code is required');
    const { db, codes, apiKeys } = deps.oauth;
    const result = await exchange(db, codes, apiKeys, deps.caps, caller, {
      code: body.code,
      redirectUri: body.redirect_uri,
      codeVerifier: body.code_verifier,
      requestProblem: problem,
    });
    if ('code' in result) return result;
    return answer(
      200,
      {
        access_token: result.accessToken,
        token_type: 'Bearer',
        app_connection_id: result.connectionId,
      },
      oauthHeaders,
    );
  },
});

/** What is wrong with a token request apart from its code, in RFC 6749's order. */
function requestProblem(body: z.infer<typeof tokenRequestSchema>): GwError | undefined {
  const missing = (name: string) => gwError('gw_invalid_request', `${name} is required`);
  if (!body.grant_type) return missing('grant_type');
  if (body.grant_type !== 'authorization_code') {
    return gwError('gw_oauth_unsupported_grant_type', 'grant_type must be authorization_code');
  }
  if (!body.code) return missing('code');
  if (!body.redirect_uri) return missing('redirect_uri');
  const pkce = verifierProblem(body.code_verifier);
  return pkce ? gwError('gw_invalid_request', pkce) : undefined;
}

/** Spends every code a request presents outside a form the handler reads (decision 276). */
async function spendPresentedCodes(deps: OAuthDeps, query: string, rawBody?: Buffer) {
  for (const code of presentedCodes(query, rawBody?.toString('utf8') ?? '')) {
    await spendCode(deps.oauth.db, deps.oauth.codes, deps.oauth.apiKeys, code);
  }
}

/** The codes a request presents (a malformed form may name one more than once). */
function presentedCodes(query: string, text: string): string[] {
  const codes = [
    // As RFC 6749 sends it (a form), and the ways a confused client might: the query string,
    // or a JSON body. Sent any way, the code was presented.
    ...new URLSearchParams(text).getAll('code'),
    ...new URLSearchParams(query).getAll('code'),
    ...jsonCode(text),
  ];
  return [...new Set(codes.filter((code) => code !== ''))].slice(0, MAX_PRESENTED_CODES);
}

function jsonCode(text: string): string[] {
  if (!text.trimStart().startsWith('{')) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    const code = (parsed as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? [code] : [];
  } catch {
    return [];
  }
}
