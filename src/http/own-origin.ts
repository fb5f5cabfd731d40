// The gateway's own origin as a request names it: the Host it was sent to, over https (or
// http in plain-HTTP development). Dashboard writes must come from it (decision 77); without
// PUBLIC_ORIGIN it is also the OAuth issuer (decision 343).

/** `https://<Host>`, or `http://<Host>` when the gateway serves plain HTTP (insecure cookies). */
export function requestOrigin(
  headers: Readonly<Record<string, string>>,
  insecure: boolean,
): string {
  return `${insecure ? 'http' : 'https'}://${headers.host ?? ''}`;
}
