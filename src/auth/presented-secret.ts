// What a caller presented as its credential, and what was wrong with it, in words that help
// without ever echoing the secret. Both key kinds (API keys on inference routes, service keys
// on management routes) read their header here, so they explain a mistake the same way.
import { gwError, type ErrorCode, type GwError } from '../errors.js';
import { secretPrefixes } from '../ids.js';

export type PresentedSecret =
  | { readonly kind: 'absent' }
  /** `Authorization: Basic …` and the like; `scheme` is echoed only when it is a plain word. */
  | { readonly kind: 'wrong_scheme'; readonly scheme: string | undefined }
  /** `Authorization: gw_…`: a key without the Bearer scheme. */
  | { readonly kind: 'missing_bearer' }
  /** `Authorization: Bearer` with nothing after it, or an empty `x-api-key`. */
  | { readonly kind: 'empty'; readonly header: 'authorization' | 'x-api-key' }
  /** `Authorization: Bearer a b`: more than one token. */
  | { readonly kind: 'extra_tokens' }
  | { readonly kind: 'secret'; readonly secret: string };

export type SecretKind = 'api_key' | 'service_key' | 'oauth_token' | 'oauth_client_secret';

const SCHEME_WORD = /^[A-Za-z][A-Za-z0-9_-]{0,19}$/;

/** Reads `Authorization: Bearer <secret>`, or (when allowed) `x-api-key: <secret>`. */
export function readPresentedSecret(
  headers: Readonly<Record<string, string>>,
  options: { readonly xApiKey: boolean },
): PresentedSecret {
  const authorization = headers.authorization;
  if (authorization === undefined) {
    const xApiKey = options.xApiKey ? headers['x-api-key'] : undefined;
    if (xApiKey === undefined) return { kind: 'absent' };
    const secret = xApiKey.trim();
    return secret === '' ? { kind: 'empty', header: 'x-api-key' } : { kind: 'secret', secret };
  }
  const tokens = authorization.trim().split(/\s+/).filter(Boolean);
  const [first, ...rest] = tokens;
  if (first === undefined) return { kind: 'empty', header: 'authorization' };
  if (first.toLowerCase() === 'bearer') {
    if (rest.length === 0) return { kind: 'empty', header: 'authorization' };
    if (rest.length > 1) return { kind: 'extra_tokens' };
    return { kind: 'secret', secret: rest[0]! };
  }
  if (first.startsWith(secretPrefixes.apiKey)) return { kind: 'missing_bearer' };
  if (rest.length === 0) {
    // One token that is not a scheme we know: a bare secret of another shape, most likely.
    return { kind: 'missing_bearer' };
  }
  return { kind: 'wrong_scheme', scheme: SCHEME_WORD.test(first) ? first : undefined };
}

/** The kind of gw secret a string looks like (longest prefix first), if any. */
export function secretKindOf(secret: string): SecretKind | undefined {
  if (secret.startsWith(secretPrefixes.serviceKey)) return 'service_key';
  if (secret.startsWith(secretPrefixes.oauthToken)) return 'oauth_token';
  if (secret.startsWith(secretPrefixes.oauthClientSecret)) return 'oauth_client_secret';
  if (secret.startsWith(secretPrefixes.apiKey)) return 'api_key';
  return undefined;
}

const secretKindNames: Record<SecretKind, string> = {
  api_key: 'an API key (gw_…)',
  service_key: 'a service key (gw_svc_…)',
  oauth_token: 'an OAuth token (gw_oauth_…)',
  oauth_client_secret: 'an OAuth client secret (gw_client_secret_…)',
};

export function describeSecretKind(kind: SecretKind): string {
  return secretKindNames[kind];
}

/**
 * Why the presented header carries no usable secret, as a message (never the secret), or
 * undefined when it does carry one. `wanted` names what the route takes, e.g. 'API key'.
 */
export function headerProblem(
  presented: PresentedSecret,
  wanted: { readonly name: string; readonly example: string; readonly xApiKey: boolean },
): string | undefined {
  const howTo = `send Authorization: Bearer ${wanted.example}`;
  switch (presented.kind) {
    case 'absent':
      // The messages protocol's clients send x-api-key: a route that reads it says so.
      return wanted.xApiKey
        ? `missing ${wanted.name}: ${howTo} or x-api-key: ${wanted.example}`
        : `missing ${wanted.name}: ${howTo}`;
    case 'wrong_scheme':
      return presented.scheme === undefined
        ? `the Authorization header does not use the Bearer scheme: ${howTo}`
        : `the Authorization header uses the ${presented.scheme} scheme, not Bearer: ${howTo}`;
    case 'missing_bearer':
      return `the Authorization header holds a value without the Bearer scheme: ${howTo}`;
    case 'empty':
      return presented.header === 'authorization'
        ? `the Authorization header has the Bearer scheme but no ${wanted.name}: ${howTo}`
        : `the x-api-key header is empty: send the ${wanted.name} in it`;
    case 'extra_tokens':
      return `the Authorization header holds more than one value after Bearer: ${howTo}`;
    case 'secret':
      return undefined;
  }
}

interface WantedSecret {
  readonly name: string;
  readonly example: string;
  /** Also read from `x-api-key` (the messages protocol's header). */
  readonly xApiKey: boolean;
  /** The code of a header that carries no usable secret. */
  readonly code: ErrorCode;
}

/** What each kind of authenticated route takes. */
const wantedSecrets: Readonly<Record<'api_key' | 'service_key', WantedSecret>> = {
  api_key: { name: 'API key', example: 'gw_…', xApiKey: true, code: 'gw_malformed_or_missing_key' },
  service_key: {
    name: 'service key',
    example: 'gw_svc_…',
    xApiKey: false,
    code: 'gw_malformed_or_missing_service_key',
  },
};

/**
 * The secret a request presents and the kind of gw secret it looks like, or the route kind's
 * error with why its header carries none.
 */
export function presentedSecretOf(
  headers: Readonly<Record<string, string>>,
  routeKind: keyof typeof wantedSecrets,
): { readonly raw: string; readonly kind: SecretKind | undefined } | GwError {
  const wanted = wantedSecrets[routeKind];
  const presented = readPresentedSecret(headers, wanted);
  if (presented.kind !== 'secret') return gwError(wanted.code, headerProblem(presented, wanted)!);
  return { raw: presented.secret, kind: secretKindOf(presented.secret) };
}
