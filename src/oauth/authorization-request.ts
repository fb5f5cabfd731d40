// The authorization request (RFC 6749 section 4.1.1 with PKCE, RFC 7636 section 4.3), checked
// the same way when the consent page is asked for (GET /oauth/authorize) and when it is
// answered (POST /oauth/authorize). An unknown client or a redirect URI that is not exactly a
// registered one is refused on the gateway's own page, never redirected to (RFC 6749 section
// 4.1.2.1); any other problem is reported to the client at its (registered) redirect URI: by
// a link the user follows from the gateway's page when the request itself has it, since
// anyone can register a client whose redirect URI is a phishing page and send people to it
// through the gateway's address with a request made to fail (RFC 9700 section 4.11.2).
// Every answer sent to the redirect URI names the gateway as its issuer (`iss`, RFC 9207), and
// never to a URI whose own query names a response parameter (it would reach the client twice).
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { findAuthorizingClient, type AuthorizingClient } from './clients.js';
import { challengeProblem } from './pkce.js';
import {
  isRegisteredRedirectUri,
  MAX_REDIRECT_URI_LENGTH,
  redirectWith,
  repeatedResponseParameter,
  responseParameterInQuery,
} from './redirect-uris.js';

/** The longest `state` echoed back; longer ones are refused (a client's state is short). */
export const MAX_STATE_LENGTH = 1024;

/**
 * The parameters an authorization request is made of: the ones a problem may name. Any other
 * name is the sender's own text, never repeated on the gateway's page.
 */
const AUTHORIZATION_PARAMETERS: readonly string[] = [
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'code_challenge',
  'code_challenge_method',
  'scope',
];

/** The request's parameters as sent (query or form). */
export interface AuthorizationParams {
  readonly response_type?: string | undefined;
  readonly client_id?: string | undefined;
  readonly redirect_uri?: string | undefined;
  readonly state?: string | undefined;
  readonly code_challenge?: string | undefined;
  readonly code_challenge_method?: string | undefined;
}

export interface ValidAuthorization {
  /** The gateway's issuer identifier (src/oauth/issuer.ts), sent back as `iss`. */
  readonly issuer: string;
  readonly client: AuthorizingClient;
  readonly redirectUri: string;
  readonly state: string | undefined;
  readonly codeChallenge: string;
}

export type AuthorizationCheck =
  /** Shown on the gateway's page (or as JSON): nothing is sent to an unverified URI. */
  | { readonly kind: 'refused'; readonly error: GwError }
  /**
   * A bad parameter, for the client's registered redirect URI as `error=…` (`location`): the
   * consent page's answer is sent there; the request itself shows it on the gateway's page,
   * with a link to `location` (RFC 9700 section 4.11.2: no automatic redirect on a request
   * anyone can craft).
   */
  | {
      readonly kind: 'redirect';
      readonly location: string;
      readonly client: AuthorizingClient;
      readonly redirectUri: string;
      readonly description: string;
    }
  | { readonly kind: 'valid'; readonly request: ValidAuthorization };

/** The parameters of a query string; `repeated` names those sent more than once. */
export function authorizationParamsOfQuery(query: string): {
  params: AuthorizationParams;
  repeated: readonly string[];
} {
  const params: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [name, value] of new URLSearchParams(query)) {
    if (Object.hasOwn(params, name)) repeated.push(name);
    else params[name] = value;
  }
  return { params, repeated };
}

export async function checkAuthorizationRequest(
  db: DbPool,
  issuer: string,
  params: AuthorizationParams,
  repeated: readonly string[] = [],
): Promise<AuthorizationCheck> {
  const client = await findAuthorizingClient(db, params.client_id);
  if (!client || repeated.includes('client_id')) {
    return refused('unknown client_id: this application is not registered with the gateway');
  }
  const redirectUri = params.redirect_uri;
  if (
    redirectUri === undefined ||
    redirectUri.length > MAX_REDIRECT_URI_LENGTH ||
    repeated.includes('redirect_uri') ||
    !isRegisteredRedirectUri(client.redirectUris, redirectUri)
  ) {
    return refused(
      'redirect_uri is not an exact match of a URI registered for this client (scheme, host, port, path, query and trailing slash must all match)',
    );
  }
  // Registered before registration refused such a URI: the answer would be ambiguous (two
  // `iss`, two `state`), so none is sent to it (decision 354).
  const repeatedInUri = responseParameterInQuery(redirectUri);
  if (repeatedInUri !== undefined) {
    return refused(
      `redirect_uri ${repeatedResponseParameter(repeatedInUri)}; the app must register one without it`,
    );
  }
  const state = params.state;
  const back = (error: string, description: string): AuthorizationCheck => ({
    kind: 'redirect',
    client,
    redirectUri,
    description,
    location: redirectWith(redirectUri, {
      error,
      error_description: description,
      ...(state !== undefined && state.length <= MAX_STATE_LENGTH && { state }),
      iss: issuer,
    }),
  });
  if (repeated.length > 0) {
    const name = AUTHORIZATION_PARAMETERS.includes(repeated[0]!) ? repeated[0] : 'each parameter';
    return back('invalid_request', `${name} must be sent once`);
  }
  if (state !== undefined && state.length > MAX_STATE_LENGTH) {
    return back('invalid_request', `state must be at most ${MAX_STATE_LENGTH} characters`);
  }
  if (params.response_type === undefined || params.response_type === '') {
    return back('invalid_request', 'response_type is required and must be code');
  }
  if (params.response_type !== 'code') {
    return back('unsupported_response_type', 'response_type must be code');
  }
  const pkce = challengeProblem(params.code_challenge, params.code_challenge_method);
  if (pkce) return back('invalid_request', pkce);
  return {
    kind: 'valid',
    request: { issuer, client, redirectUri, state, codeChallenge: params.code_challenge! },
  };
}

/** Where the user's answer sends the browser: the code, or `access_denied`. */
export function answerLocation(
  request: ValidAuthorization,
  answer: { readonly code: string } | { readonly error: 'access_denied' },
): string {
  const state: Record<string, string> = request.state === undefined ? {} : { state: request.state };
  return redirectWith(
    request.redirectUri,
    'code' in answer
      ? { code: answer.code, ...state, iss: request.issuer }
      : {
          error: 'access_denied',
          error_description: 'the user denied the request',
          ...state,
          iss: request.issuer,
        },
  );
}

function refused(message: string): AuthorizationCheck {
  return { kind: 'refused', error: gwError('gw_redirect_uri_mismatch', message) };
}
