// Which address a request came from, for what counts per client (the sign-in, sign-up and
// e-mail link throttles). Behind a reverse proxy or a load balancer every peer is the proxy, so
// every client would share one count. With TRUSTED_PROXIES set, a request whose peer is one of
// them came from the address the proxies appended to X-Forwarded-For: the rightmost entry that
// is not itself a trusted proxy. Entries to its left were sent by the client and prove nothing;
// from an untrusted peer the header is ignored altogether (decision 418).
import { BlockList, isIP } from 'node:net';

/** Whether an address (as text) is one of the trusted proxies. */
export type TrustedProxies = (address: string) => boolean;

/**
 * The matcher of a TRUSTED_PROXIES value (comma-separated addresses and CIDR ranges, IPv4 or
 * IPv6), or the position of the first entry that is neither.
 */
export function parseTrustedProxies(
  text: string,
): { ok: true; trusted: TrustedProxies | undefined } | { ok: false; entry: number } {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return { ok: true, trusted: undefined };
  const list = new BlockList();
  for (const [index, entry] of entries.entries()) {
    const [address = '', prefixText, extra] = entry.split('/');
    const family = isIP(address);
    const maxPrefix = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? maxPrefix : Number(prefixText);
    if (
      family === 0 ||
      extra !== undefined ||
      !/^\d{1,3}$/.test(prefixText ?? '0') ||
      !(prefix >= 0 && prefix <= maxPrefix)
    ) {
      return { ok: false, entry: index + 1 };
    }
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return {
    ok: true,
    trusted: (text) => {
      const address = plainAddress(text);
      const family = isIP(address);
      return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/** The client's address: the peer's, or behind trusted proxies the one they forwarded. */
export function clientAddress(
  peer: string,
  forwardedFor: string | undefined,
  trusted: TrustedProxies | undefined,
): string {
  if (trusted === undefined || forwardedFor === undefined || !trusted(peer)) return peer;
  const hops = forwardedFor.split(',');
  for (let index = hops.length - 1; index >= 0; index -= 1) {
    const hop = plainAddress(hops[index]!.trim());
    if (isIP(hop) === 0) return peer; // not an address: nothing to its left can be believed
    if (!trusted(hop)) return hop;
  }
  // Every hop is a trusted proxy: the leftmost is as far as the chain goes.
  return plainAddress(hops[0]!.trim());
}

/** An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`) as IPv4; others as they are. */
function plainAddress(text: string): string {
  return text.toLowerCase().startsWith('::ffff:') && isIP(text.slice(7)) === 4
    ? text.slice(7)
    : text;
}
