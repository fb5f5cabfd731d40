// Redirect URIs of OAuth clients: which may be registered, how one is matched (exactly, as a
// string: scheme, host, port, path, query and trailing slash all count — RFC 9700 section
// 4.1.3), and how the answer's parameters are added to it without touching what is there.

/** A client registers at least one and at most this many redirect URIs. */
export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 2000;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** RFC 8252 section 7.1: a native app's private-use scheme is a reversed domain name. */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/;

/**
 * The parameters an authorization response adds to the redirect URI (RFC 6749 sections 4.1.2
 * and 4.1.2.1, RFC 9207 section 2). A registered URI's query is kept as it is, so one of these
 * in it would reach the client twice.
 */
export const AUTHORIZATION_RESPONSE_PARAMETERS: readonly string[] = [
  'code',
  'state',
  'iss',
  'error',
  'error_description',
  'error_uri',
];

/**
 * The first authorization response parameter `uri`'s query already names (as a client reads
 * it: form-decoded, so `i%73s` is `iss`), or undefined.
 */
export function responseParameterInQuery(uri: string): string | undefined {
  const queryAt = uri.indexOf('?');
  if (queryAt === -1) return undefined;
  const fragmentAt = uri.indexOf('#', queryAt);
  const query = uri.slice(queryAt + 1, fragmentAt === -1 ? undefined : fragmentAt);
  for (const name of new URLSearchParams(query).keys()) {
    if (AUTHORIZATION_RESPONSE_PARAMETERS.includes(name)) return name;
  }
  return undefined;
}

/**
 * Why a URI whose query names `name` cannot serve as a redirect URI: the answer would carry
 * the parameter twice, and a client would read the registered value, not the gateway's (its
 * `iss` check against mix-up attacks included: RFC 9207 section 2.4).
 */
export function repeatedResponseParameter(name: string): string {
  return `must not carry ${name} in its query: the authorization response adds its own ${name}, and a response parameter is sent once (RFC 6749 section 3.1, RFC 9207)`;
}

/** Why `uri` cannot be registered as a redirect URI, or undefined when it can. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length === 0) return 'must not be empty';
  if (uri.length > MAX_REDIRECT_URI_LENGTH)
    return `must be at most ${MAX_REDIRECT_URI_LENGTH} characters`;
  // Printable ASCII only: what is registered is compared byte for byte with what is sent.
  if (!/^[\x21-\x7e]+$/.test(uri)) return 'must be printable ASCII without spaces';
  if (uri.includes('#')) return 'must not have a fragment (RFC 6749 section 3.1.2)';
  const repeated = responseParameterInQuery(uri);
  if (repeated !== undefined) return repeatedResponseParameter(repeated);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return url.hostname === '' ? 'must name a host' : undefined;
  if (scheme === 'http') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : 'http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https';
  }
  if (PRIVATE_USE_SCHEME.test(scheme)) return undefined;
  return 'must use https, http on a loopback host, or a private-use scheme such as com.example.app:';
}

/** Is `presented` exactly one of the client's registered redirect URIs? */
export function isRegisteredRedirectUri(
  registered: readonly string[],
  presented: string | undefined,
): presented is string {
  return presented !== undefined && registered.includes(presented);
}

/**
 * The redirect URI with the answer's parameters appended; its own query is kept as it was
 * registered (RFC 6749 section 3.1.2), never re-encoded.
 */
export function redirectWith(uri: string, params: Readonly<Record<string, string>>): string {
  const query = new URLSearchParams(params).toString();
  if (!uri.includes('?')) return `${uri}?${query}`;
  return uri.endsWith('?') || uri.endsWith('&') ? `${uri}${query}` : `${uri}&${query}`;
}

/**
 * The Content-Security-Policy source that lets a form's answer redirect to `uri` (browsers
 * check form-action against redirects too): its origin, or for a private-use scheme the
 * scheme. Registered URIs are printable ASCII without spaces, quotes, commas or semicolons
 * in these parts, so the source cannot change the policy around it.
 */
export function formActionSource(uri: string): string {
  const url = new URL(uri);
  const scheme = url.protocol.slice(0, -1);
  // A CSP host-source cannot name an IPv6 literal: [::1] gets its scheme.
  if ((scheme === 'http' || scheme === 'https') && !url.hostname.startsWith('[')) return url.origin;
  return `${scheme}:`;
}
