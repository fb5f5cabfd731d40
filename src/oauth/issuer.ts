// The gateway's issuer identifier as an OAuth authorization server (RFC 8414 section 2): the
// base of its metadata's endpoint URLs, and the `iss` of every authorization response (RFC
// 9207), by which a client that talks to several servers knows which one answered.
import { requestOrigin } from '../http/own-origin.js';

export interface IssuerSettings {
  /** PUBLIC_ORIGIN, normalised (src/config.ts); undefined when unset. */
  readonly publicOrigin: string | undefined;
  /** Plain-HTTP development (DASHBOARD_INSECURE_COOKIES): the request's origin is http://. */
  readonly insecure: boolean;
}

/** PUBLIC_ORIGIN, else the origin the request was sent to (decision 343). */
export function issuerOf(
  settings: IssuerSettings,
  headers: Readonly<Record<string, string>>,
): string {
  return settings.publicOrigin ?? requestOrigin(headers, settings.insecure);
}
