// Which address a request came from, for what counts per client (the sign-in, sign-up and
// e-mail link throttles). Behind a reverse proxy or a load balancer every peer is the proxy, so
// every client would share one count. With TRUSTED_PROXIES set, a request whose peer is one of
// them came from the address the proxies appended to X-Forwarded-For: the rightmost entry that
// is not itself a trusted proxy. Entries to its left were sent by the client and prove nothing;
// from an untrusted peer the header is ignored altogether (decision 418). An entry may carry
// the port the proxy saw (`203.0.113.7:51234`, `[2001:db8::1]:51234`) or an IPv6 address's
// brackets without one: the address is what counts (decision 449). Every address is read in
// one form (canonicalAddress): an IPv4 client mapped into IPv6 is its IPv4 address (decision 472).
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
      const address = canonicalAddress(text);
      const family = isIP(address);
      return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/**
 * The client's address: the peer's, or behind trusted proxies the one they forwarded; either
 * in its canonical form.
 */
export function clientAddress(
  peerAsWritten: string,
  forwardedFor: string | undefined,
  trusted: TrustedProxies | undefined,
): string {
  const peer = canonicalAddress(peerAsWritten);
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
 * proxies write (Azure Application Gateway: `203.0.113.7:51234`, `[2001:db8::1]:51234`), in
 * its canonical form; undefined when it names none. An IPv6 address with a port must be
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
  return canonicalAddress(address);
}

/** ::ffff:0:0/96, where IPv6 holds IPv4 addresses (RFC 4291 §2.5.5.2): its first 96 bits. */
const IPV4_MAPPED = [0, 0, 0, 0, 0, 0xffff] as const;

/**
 * An address in the one form gw counts and logs it by. An IPv4 address mapped into IPv6 in any
 * text form (`::ffff:198.51.100.7`, `::FFFF:c633:6407`, or the eight groups uWebSockets.js
 * writes a dual-stack listener's IPv4 peer as, `0000:0000:0000:0000:0000:ffff:c633:6407`) is
 * that IPv4 address; any other IPv6 address is written as RFC 5952 says (lower case, no
 * leading zeros, the longest run of zero groups as `::`), its zone kept; IPv4, and text that
 * is no address, as it is.
 */
export function canonicalAddress(text: string): string {
  if (isIP(text) !== 6) return text;
  const groups = ipv6Groups(text);
  const ipv4 = embeddedIpv4(groups, IPV4_MAPPED);
  if (ipv4 !== undefined) return ipv4;
  const zone = text.indexOf('%');
  return `${rfc5952(groups)}${zone === -1 ? '' : text.slice(zone)}`;
}

/** An IPv6 address (isIP's 6) in any text form as its eight 16-bit groups, its zone dropped. */
export function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0]!;
  const ipv4Tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (ipv4Tail) {
    const [a, b, c, d] = ipv4Tail.slice(1).map(Number) as [number, number, number, number];
    const hex = (high: number, low: number): string => ((high << 8) | low).toString(16);
    text = `${text.slice(0, ipv4Tail.index)}${hex(a, b)}:${hex(c, d)}`;
  }
  const [head = '', tail] = text.split('::');
  const groupsOf = (part: string | undefined): number[] =>
    part === undefined || part === '' ? [] : part.split(':').map((group) => parseInt(group, 16));
  const left = groupsOf(head);
  const right = groupsOf(tail);
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<number>(zeros).fill(0), ...right];
}

/** The IPv4 address in an IPv6 address's last 32 bits, when its first 96 are `prefix`. */
export function embeddedIpv4(
  groups: readonly number[],
  prefix: readonly number[],
): string | undefined {
  if (prefix.some((group, index) => groups[index] !== group)) return undefined;
  const [high = 0, low = 0] = groups.slice(6);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Eight groups as RFC 5952 §4 writes them. */
function rfc5952(groups: readonly number[]): string {
  // The longest run of two or more zero groups (the first of equal ones) becomes `::`.
  let runStart = -1;
  let runLength = 1;
  for (let start = 0; start < 8; start += 1) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length += 1;
    if (length > runLength) [runStart, runLength] = [start, length];
    start += length;
  }
  const hex = (part: readonly number[]): string =>
    part.map((group) => group.toString(16)).join(':');
  if (runStart === -1) return hex(groups);
  return `${hex(groups.slice(0, runStart))}::${hex(groups.slice(runStart + runLength))}`;
}
