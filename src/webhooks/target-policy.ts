// Where webhooks may be sent. A URL must be https (http only where config allows it) and may
// not reach loopback, private, link-local, carrier-grade NAT, multicast, documentation or cloud
// metadata addresses (unless config allows private targets: tests, on-premise). Checked when an
// endpoint is saved and again for every connection: the address the check approves is the one
// the connection uses (the lookup below), so a name that later resolves elsewhere (DNS
// rebinding) is refused at connect time.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

export interface TargetPolicy {
  /** http:// URLs are accepted (tests, on-premise). */
  readonly allowHttp: boolean;
  /** Loopback and private addresses are accepted (tests, on-premise). */
  readonly allowPrivate: boolean;
}

/** Resolves a host name to every address it has. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export const MAX_URL_CHARS = 2048;
/** How long an endpoint's creation waits for DNS before accepting a name it cannot resolve. */
const CREATION_LOOKUP_TIMEOUT_MS = 3000;

const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata, 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata, 169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 96], // unspecified, loopback, IPv4-compatible (deprecated: ::127.0.0.1)
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['fc00::', 7], // unique local (AWS metadata fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

/** The eight 16-bit groups of a valid IPv6 address (a dotted IPv4 tail is the last two). */
function groupsOf(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((group) => parseInt(group, 16));
  const first = parse(head);
  const last = tail === undefined ? [] : parse(tail);
  const groups = [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
  return groups.length === 8 ? groups : undefined;
}

/**
 * The IPv4 address an IPv6 address embeds, if any: IPv4-mapped (::ffff:0:0/96), IPv4-translated
 * (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, and the local-use 64:ff9b:1::/48 in its /96 form),
 * 6to4 (2002::/16).
 */
function embeddedIpv4(address: string): string | undefined {
  const g = groupsOf(address);
  if (!g) return undefined;
  const dottedOf = (high: number, low: number): string =>
    [high >> 8, high & 255, low >> 8, low & 255].join('.');
  const zeroFrom = (start: number, end: number): boolean =>
    g.slice(start, end).every((group) => group === 0);
  const lastTwo = dottedOf(g[6]!, g[7]!);
  if (zeroFrom(0, 5) && g[5] === 0xffff) return lastTwo;
  if (zeroFrom(0, 4) && g[4] === 0xffff && g[5] === 0) return lastTwo;
  if (g[0] === 0x64 && g[1] === 0xff9b && (zeroFrom(2, 6) || g[2] === 1)) return lastTwo;
  if (g[0] === 0x2002) return dottedOf(g[1]!, g[2]!);
  return undefined;
}

/** True for an address no webhook may reach (unless private targets are allowed). */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return refused.check(address, 'ipv4');
  const embedded = embeddedIpv4(address);
  if (embedded !== undefined && refused.check(embedded, 'ipv4')) return true;
  return refused.check(address, 'ipv6');
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks a URL's form: scheme, no credentials, a host, the length; and, when its host is an
 * address, the address. Returns the parsed URL or why it is refused.
 */
export function checkTargetUrl(text: string, policy: TargetPolicy): URL | string {
  if (text.length > MAX_URL_CHARS) return `must be at most ${MAX_URL_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    return policy.allowHttp ? 'must be an http or https URL' : 'must be an https URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.hash !== '') return 'must not have a fragment';
  const host = hostOf(url);
  if (host === '') return 'must name a host';
  if (isIP(host) !== 0 && !policy.allowPrivate && isRefusedAddress(host)) {
    return 'must not point to a loopback, private, link-local or metadata address';
  }
  return url;
}

/**
 * The creation-time address check: every address the host resolves to must be allowed. A
 * name that does not resolve (yet) is accepted: deliveries to it fail until it does, and
 * every connection is checked again anyway.
 */
export async function checkTargetAddresses(
  url: URL,
  policy: TargetPolicy,
  resolve: Resolver = systemResolver,
): Promise<string | null> {
  if (policy.allowPrivate) return null;
  const host = hostOf(url);
  if (isIP(host) !== 0) return isRefusedAddress(host) ? refusedAddressReason(host) : null;
  let addresses: LookupAddress[];
  try {
    addresses = await withTimeout(resolve(host), CREATION_LOOKUP_TIMEOUT_MS);
  } catch {
    return null;
  }
  const bad = addresses.find((entry) => isRefusedAddress(entry.address));
  return bad ? refusedAddressReason(host) : null;
}

const REFUSED_ADDRESS = 'resolves to a loopback, private, link-local or metadata address';

function refusedAddressReason(host: string): string {
  return `${REFUSED_ADDRESS} (${host})`;
}

/** A connection refused because of where it would go. */
export class TargetRefusedError extends Error {
  override readonly name = 'TargetRefusedError';
  readonly code = 'GW_WEBHOOK_TARGET_REFUSED';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/tls.connect (undici's connect options): resolves, refuses the host if
 * any of its addresses is refused, and hands the connection exactly the addresses it checked.
 */
export function guardedLookup(policy: TargetPolicy, resolve: Resolver = systemResolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
            '',
          );
          return;
        }
        if (!policy.allowPrivate && addresses.some((entry) => isRefusedAddress(entry.address))) {
          callback(new TargetRefusedError(`${hostname}: ${REFUSED_ADDRESS}`), '');
          return;
        }
        const wanted =
          options.family === 4 || options.family === 6
            ? addresses.filter((entry) => entry.family === options.family)
            : addresses;
        if (options.all) callback(null, wanted);
        else if (wanted[0]) callback(null, wanted[0].address, wanted[0].family);
        else
          callback(
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
            '',
          );
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error as Error);
      },
    );
  });
}
