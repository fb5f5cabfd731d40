// Where webhooks may be sent. A URL must be https (http only where config allows it), name a
// port other than 0, and may not reach an address that is not globally reachable — loopback,
// private, link-local (cloud metadata), carrier-grade NAT, multicast, documentation, reserved:
// REFUSED_RANGES below — unless config allows private targets (tests, on-premise). Checked when an
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

/** A range of addresses no webhook may reach, and why. */
export interface RefusedRange {
  readonly network: string;
  readonly prefix: number;
  readonly why: string;
}

/**
 * Every range a webhook may not reach: what IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries mark not globally reachable, multicast, and every IPv6 address outside global
 * unicast (2000::/3, RFC 4291: the rest is reserved, or taken by the local ranges below). A few
 * sub-blocks of 192.0.0.0/24 and 2001::/23 are marked globally reachable (PCP and TURN anycast,
 * AMT, AS112, ORCHIDv2, drone identifiers): anycast services and identifiers, never a webhook's
 * receiver, so the whole blocks are refused. An IPv6 address that carries an IPv4 one
 * (carriedIpv4) is judged by the IPv4 address. The first row that holds an address says why:
 * the narrower rows come first.
 */
export const REFUSED_RANGES: readonly RefusedRange[] = [
  { network: '0.0.0.0', prefix: 8, why: '"this" network (RFC 791)' },
  { network: '10.0.0.0', prefix: 8, why: 'private use (RFC 1918)' },
  {
    network: '100.64.0.0',
    prefix: 10,
    why: 'shared address space, carrier-grade NAT (RFC 6598; Alibaba metadata 100.100.100.200)',
  },
  { network: '127.0.0.0', prefix: 8, why: 'loopback (RFC 1122)' },
  {
    network: '169.254.0.0',
    prefix: 16,
    why: 'link-local (RFC 3927; cloud metadata 169.254.169.254)',
  },
  { network: '172.16.0.0', prefix: 12, why: 'private use (RFC 1918)' },
  { network: '192.0.0.0', prefix: 24, why: 'IETF protocol assignments (RFC 6890)' },
  { network: '192.0.2.0', prefix: 24, why: 'documentation, TEST-NET-1 (RFC 5737)' },
  { network: '192.88.99.0', prefix: 24, why: '6to4 relay anycast, deprecated (RFC 7526)' },
  { network: '192.168.0.0', prefix: 16, why: 'private use (RFC 1918)' },
  { network: '198.18.0.0', prefix: 15, why: 'benchmarking (RFC 2544)' },
  { network: '198.51.100.0', prefix: 24, why: 'documentation, TEST-NET-2 (RFC 5737)' },
  { network: '203.0.113.0', prefix: 24, why: 'documentation, TEST-NET-3 (RFC 5737)' },
  { network: '224.0.0.0', prefix: 4, why: 'multicast (RFC 5771)' },
  {
    network: '240.0.0.0',
    prefix: 4,
    why: 'reserved (RFC 1112), and the limited broadcast 255.255.255.255 (RFC 919)',
  },
  { network: '::', prefix: 128, why: 'unspecified (RFC 4291)' },
  { network: '::1', prefix: 128, why: 'loopback (RFC 4291)' },
  { network: '::', prefix: 96, why: 'IPv4-compatible, deprecated (RFC 4291)' },
  { network: '64:ff9b:1::', prefix: 48, why: 'local-use IPv4/IPv6 translation (RFC 8215)' },
  { network: '100::', prefix: 64, why: 'discard-only (RFC 6666)' },
  { network: '100:0:0:1::', prefix: 64, why: 'dummy prefix (RFC 9780)' },
  { network: '2001::', prefix: 32, why: 'Teredo (RFC 4380)' },
  { network: '2001:2::', prefix: 48, why: 'benchmarking (RFC 5180)' },
  { network: '2001:10::', prefix: 28, why: 'ORCHID, deprecated (RFC 4843)' },
  { network: '2001:20::', prefix: 28, why: 'ORCHIDv2: identifiers, not locators (RFC 7343)' },
  { network: '2001::', prefix: 23, why: 'IETF protocol assignments (RFC 2928)' },
  { network: '2001:db8::', prefix: 32, why: 'documentation (RFC 3849)' },
  { network: '3fff::', prefix: 20, why: 'documentation (RFC 9637)' },
  { network: '5f00::', prefix: 16, why: 'SRv6 segment identifiers (RFC 9602)' },
  { network: 'fc00::', prefix: 7, why: 'unique local (RFC 4193; AWS metadata fd00:ec2::254)' },
  { network: 'fe80::', prefix: 10, why: 'link-local (RFC 4291)' },
  { network: 'fec0::', prefix: 10, why: 'site-local, deprecated (RFC 3879)' },
  { network: 'ff00::', prefix: 8, why: 'multicast (RFC 4291)' },
  { network: '::', prefix: 3, why: 'not global unicast: reserved by the IETF (RFC 4291)' },
  { network: '4000::', prefix: 2, why: 'not global unicast: reserved by the IETF (RFC 4291)' },
  { network: '8000::', prefix: 1, why: 'not global unicast: reserved by the IETF (RFC 4291)' },
];

/** Each row with a BlockList of its own (node:net's subnet matching), to name the row that holds an address. */
const rangeChecks = REFUSED_RANGES.map((range) => {
  const family = isIP(range.network) === 4 ? ('ipv4' as const) : ('ipv6' as const);
  const list = new BlockList();
  list.addSubnet(range.network, range.prefix, family);
  return { range, family, list };
});

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
 * The IPv4 address an IPv6 address carries, if any, read from its groups: IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), the well-known NAT64 prefix
 * (64:ff9b::/96, RFC 6052), 6to4 (2002::/16). A connection to one of them reaches that IPv4
 * address (through a translator or a relay), so it is judged by that address.
 */
function carriedIpv4(address: string): string | undefined {
  const g = groupsOf(address);
  if (!g) return undefined;
  const dottedOf = (high: number, low: number): string =>
    [high >> 8, high & 255, low >> 8, low & 255].join('.');
  const zeroFrom = (start: number, end: number): boolean =>
    g.slice(start, end).every((group) => group === 0);
  const lastTwo = dottedOf(g[6]!, g[7]!);
  if (zeroFrom(0, 5) && g[5] === 0xffff) return lastTwo;
  if (zeroFrom(0, 4) && g[4] === 0xffff && g[5] === 0) return lastTwo;
  if (g[0] === 0x64 && g[1] === 0xff9b && zeroFrom(2, 6)) return lastTwo;
  if (g[0] === 0x2002) return dottedOf(g[1]!, g[2]!);
  return undefined;
}

/**
 * The refused range an address is in (REFUSED_RANGES; for an IPv6 address that carries an
 * IPv4 one, the IPv4 address's range), or undefined when a webhook may reach it.
 */
export function refusedRangeOf(address: string): RefusedRange | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const carried = family === 6 ? carriedIpv4(address) : undefined;
  const checked = carried ?? address;
  const checkedFamily = carried !== undefined || family === 4 ? 'ipv4' : 'ipv6';
  return rangeChecks.find(
    (check) => check.family === checkedFamily && check.list.check(checked, checkedFamily),
  )?.range;
}

/** True for an address no webhook may reach (unless private targets are allowed). */
export function isRefusedAddress(address: string): boolean {
  return isIP(address) === 0 || refusedRangeOf(address) !== undefined;
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
  // Port 0 is no port (the URL parser keeps it): nothing listens there to answer.
  if (url.port === '0') return 'must not use port 0';
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
