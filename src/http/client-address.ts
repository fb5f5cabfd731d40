// Which address a request came from, for what counts per client (the sign-in, sign-up and
// e-mail link throttles). Behind a reverse proxy or a load balancer every peer is the proxy, so
// every client would share one count. With TRUSTED_PROXIES set, a request whose peer is one of
// them came from the address the proxies appended to X-Forwarded-For: the rightmost entry that
// is not itself a trusted proxy. Entries to its left were sent by the client and prove nothing;
// from an untrusted peer the header is ignored altogether (decision 418). An entry may carry
// the port the proxy saw (`203.0.113.7:51234`, `[2001:db8::1]:51234`) or an IPv6 address's
// brackets without one: the address is what counts (decision 449).
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
    const hop = forwardedAddress(hops[index]!);
    if (hop === undefined) return peer; // not an address: nothing to its left can be believed
    if (!trusted(hop)) return hop;
  }
  // Every hop is a trusted proxy: the leftmost is as far as the chain goes.
  return forwardedAddress(hops[0]!) ?? peer;
}

/** `203.0.113.7:51234`: an IPv4 address and a port (one colon, so never an IPv6 address). */
const IPV4_WITH_PORT = /^([^:]*):(\d{1,5})$/;
/** `[2001:db8::1]:51234` or `[2001:db8::1]`: an IPv6 address in brackets, a port or none. */
const BRACKETED = /^\[([^\]]*)\](?::(\d{1,5}))?$/;

/**
 * An X-Forwarded-For entry as the address it names, without the port or the brackets some
 * proxies write (Azure Application Gateway: `203.0.113.7:51234`, `[2001:db8::1]:51234`), the
 * IPv4 of `::ffff:a.b.c.d`; undefined when it names none. An IPv6 address with a port must be
 * in brackets (unbracketed, its last group and a port cannot be told apart), and the brackets
 * hold an IPv6 address only (RFC 3986's IP-literal).
 */
function forwardedAddress(entry: string): string | undefined {
  const text = entry.trim();
  const bracketed = BRACKETED.exec(text);
  const withPort = IPV4_WITH_PORT.exec(text);
  const [, address = text, port] = bracketed ?? withPort ?? [];
  const family = bracketed ? 6 : withPort ? 4 : isIP(address);
  if (family === 0 || isIP(address) !== family || Number(port ?? 0) > 65_535) return undefined;
  return plainAddress(address);
}

/** An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`) as IPv4; others as they are. */
function plainAddress(text: string): string {
  return text.toLowerCase().startsWith('::ffff:') && isIP(text.slice(7)) === 4
    ? text.slice(7)
    : text;
}
