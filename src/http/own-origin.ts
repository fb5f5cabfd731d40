// The gateway's own origin as a request names it: the Host it was sent to, over https (or
// http in plain-HTTP development). Dashboard writes must come from it (decision 77); without
// PUBLIC_ORIGIN it is also the OAuth issuer (decision 343), so the HTTP layer refuses a Host
// that is not one host[:port] before any route reads it (decision 346). Configured origins
// (PUBLIC_ORIGIN, DASHBOARD_ALLOWED_ORIGINS) are normalised here the same way (decision 354).

/**
 * RFC 3986's host (an IP literal in brackets, or a name of unreserved, sub-delims and
 * percent-encoded characters) and an optional port: nothing that could move a URL built on it
 * to another host or path (`@`, `/`, `?`, `#`, `\`, spaces, quotes, non-ASCII).
 */
const HOST_AND_PORT = /^(?:\[[0-9A-Za-z:.%_~-]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::[0-9]{0,5})?$/;

/** Why a Host header cannot name the gateway (RFC 9112 section 3.2: answered 400), or undefined. */
export function hostProblem(host: string | undefined): string | undefined {
  // uWS drops an HTTP/1.1 request without Host before any handler runs.
  if (host === undefined || HOST_AND_PORT.test(host)) return undefined;
  return 'header host: must be host[:port]';
}

/**
 * `scheme://host[:port]` (http or https) as URL writes an origin (lower-case scheme and host,
 * no default port, no trailing slash): what a browser sends as its Origin. Undefined for
 * anything else: a path, query, fragment or user name, another scheme, no host.
 */
export function originOf(value: string): string | undefined {
  // No path (a trailing slash aside; URL reads a backslash as one), query or fragment; then no
  // user name.
  if (!/^https?:\/\/[^/\\?#]+\/?$/i.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.username === '' && url.password === '' ? url.origin : undefined;
}

/**
 * `https://<Host>`, or `http://<Host>` when the gateway serves plain HTTP (insecure cookies),
 * as URL writes an origin (lower case, no default port): as a browser writes its Origin, and
 * the same for every Host a cache in front may take for one.
 */
export function requestOrigin(
  headers: Readonly<Record<string, string>>,
  insecure: boolean,
): string {
  const origin = `${insecure ? 'http' : 'https'}://${headers.host ?? ''}`;
  try {
    return new URL(origin).origin;
  } catch {
    return origin; // a host URL refuses (a port past 65535): compared, never matched
  }
}
