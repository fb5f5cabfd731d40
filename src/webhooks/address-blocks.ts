// Which addresses a webhook may reach: IANA's special-purpose address registries as one table,
// ADDRESS_BLOCKS, and the one function that reads it, refusedBlockOf. The target policy
// (target-policy.ts) asks it for every literal in a URL and every address a name resolves to.
import { isIP } from 'node:net';

/**
 * The IPv4 addresses an IPv6 address carries, from its eight 16-bit groups: a connection to
 * the IPv6 address ends at them (the socket layer, a translator or a relay sends it on).
 */
type CarriedIpv4 = (groups: readonly number[]) => string[];

const dottedOf = (high: number, low: number): string =>
  [high >> 8, high & 255, low >> 8, low & 255].join('.');
/** IPv4-mapped and NAT64 (RFC 6052, /96): the last 32 bits. */
const lastThirtyTwoBits: CarriedIpv4 = (g) => [dottedOf(g[6]!, g[7]!)];
/** 6to4 (RFC 3056): bits 16–47. */
const sixToFourBits: CarriedIpv4 = (g) => [dottedOf(g[1]!, g[2]!)];
/** Teredo (RFC 4380 §4): the server in bits 32–63, the client inverted in the last 32 bits. */
const teredoServerAndClient: CarriedIpv4 = (g) => [
  dottedOf(g[2]!, g[3]!),
  dottedOf(g[6]! ^ 0xffff, g[7]! ^ 0xffff),
];

/**
 * What the addresses of a block get: refused, reachable, or judged by the IPv4 addresses they
 * carry (reachable only if every one of them is).
 */
export type Verdict = 'refused' | 'reachable' | CarriedIpv4;

interface Block {
  readonly network: string;
  readonly prefix: number;
  readonly why: string;
}

/** A block no webhook may reach, and what a refusal calls its addresses. */
export interface RefusedBlock extends Block {
  readonly verdict: 'refused';
  /** The kind of address, as a refusal names it: "a documentation address". */
  readonly kind: string;
}

/** A block of addresses, what a webhook to it gets, and why. */
export type AddressBlock =
  RefusedBlock | (Block & { readonly verdict: Exclude<Verdict, 'refused'> });

/**
 * Every block with a verdict; an address gets the verdict of the narrowest block that holds
 * it (the registries' "unless allowed by a more specific allocation"), and one no block holds
 * is reachable. The rows are every entry of IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries (the IPv6 one as updated 2025-10-09), each "Globally Reachable: False" entry
 * refused and each "True" entry reachable, and beside them: multicast, and every IPv6 address outside global unicast
 * 2000::/3 (RFC 4291: the IPv6 Address Space registry's "Reserved by IETF"). Entries whose
 * reachability is "N/A" (Teredo, 6to4) or that stand for an IPv4 address (IPv4-mapped, NAT64
 * 64:ff9b::/96) are judged by the IPv4 addresses they carry: the connection ends there, and an
 * attacker could write 127.0.0.1 or 10.x into them. Terminated entries (the 6to4 relay
 * anycast, ORCHID) promise nothing and stay refused. Decision 391.
 */
export const ADDRESS_BLOCKS: readonly AddressBlock[] = [
  // IPv4 Special-Purpose Address Registry
  {
    network: '0.0.0.0',
    prefix: 8,
    verdict: 'refused',
    kind: 'a this-network address',
    why: '"this" network (RFC 791)',
  },
  {
    network: '0.0.0.0',
    prefix: 32,
    verdict: 'refused',
    kind: 'a this-host address',
    why: '"this" host (RFC 1122)',
  },
  {
    network: '10.0.0.0',
    prefix: 8,
    verdict: 'refused',
    kind: 'a private-use address',
    why: 'private use (RFC 1918)',
  },
  {
    network: '100.64.0.0',
    prefix: 10,
    verdict: 'refused',
    kind: 'a shared (carrier-grade NAT) address',
    why: 'shared address space, carrier-grade NAT (RFC 6598; Alibaba metadata 100.100.100.200)',
  },
  {
    network: '127.0.0.0',
    prefix: 8,
    verdict: 'refused',
    kind: 'a loopback address',
    why: 'loopback (RFC 1122)',
  },
  {
    network: '169.254.0.0',
    prefix: 16,
    verdict: 'refused',
    kind: 'a link-local address',
    why: 'link-local (RFC 3927; cloud metadata 169.254.169.254)',
  },
  {
    network: '172.16.0.0',
    prefix: 12,
    verdict: 'refused',
    kind: 'a private-use address',
    why: 'private use (RFC 1918)',
  },
  {
    network: '192.0.0.0',
    prefix: 24,
    verdict: 'refused',
    kind: 'an IETF protocol assignment address',
    why: 'IETF protocol assignments, unusable but for a narrower entry (RFC 6890)',
  },
  {
    network: '192.0.0.0',
    prefix: 29,
    verdict: 'refused',
    kind: 'an IPv4 service continuity address',
    why: 'IPv4 service continuity, DS-Lite (RFC 7335)',
  },
  {
    network: '192.0.0.8',
    prefix: 32,
    verdict: 'refused',
    kind: 'an IPv4 dummy address',
    why: 'IPv4 dummy address (RFC 7600)',
  },
  {
    network: '192.0.0.9',
    prefix: 32,
    verdict: 'reachable',
    why: 'Port Control Protocol anycast (RFC 7723)',
  },
  { network: '192.0.0.10', prefix: 32, verdict: 'reachable', why: 'TURN anycast (RFC 8155)' },
  {
    network: '192.0.0.170',
    prefix: 32,
    verdict: 'refused',
    kind: 'a NAT64/DNS64 discovery address',
    why: 'NAT64/DNS64 discovery (RFC 8880)',
  },
  {
    network: '192.0.0.171',
    prefix: 32,
    verdict: 'refused',
    kind: 'a NAT64/DNS64 discovery address',
    why: 'NAT64/DNS64 discovery (RFC 8880)',
  },
  {
    network: '192.0.2.0',
    prefix: 24,
    verdict: 'refused',
    kind: 'a documentation address',
    why: 'documentation, TEST-NET-1 (RFC 5737)',
  },
  { network: '192.31.196.0', prefix: 24, verdict: 'reachable', why: 'AS112-v4 (RFC 7535)' },
  { network: '192.52.193.0', prefix: 24, verdict: 'reachable', why: 'AMT (RFC 7450)' },
  {
    network: '192.88.99.0',
    prefix: 24,
    verdict: 'refused',
    kind: 'a withdrawn 6to4 relay anycast address',
    why: '6to4 relay anycast, terminated 2015 (RFC 7526)',
  },
  {
    network: '192.88.99.2',
    prefix: 32,
    verdict: 'refused',
    kind: 'a 6a44 relay anycast address',
    why: '6a44 relay anycast (RFC 6751)',
  },
  {
    network: '192.168.0.0',
    prefix: 16,
    verdict: 'refused',
    kind: 'a private-use address',
    why: 'private use (RFC 1918)',
  },
  {
    network: '192.175.48.0',
    prefix: 24,
    verdict: 'reachable',
    why: 'AS112 direct delegation (RFC 7534)',
  },
  {
    network: '198.18.0.0',
    prefix: 15,
    verdict: 'refused',
    kind: 'a benchmarking address',
    why: 'benchmarking (RFC 2544)',
  },
  {
    network: '198.51.100.0',
    prefix: 24,
    verdict: 'refused',
    kind: 'a documentation address',
    why: 'documentation, TEST-NET-2 (RFC 5737)',
  },
  {
    network: '203.0.113.0',
    prefix: 24,
    verdict: 'refused',
    kind: 'a documentation address',
    why: 'documentation, TEST-NET-3 (RFC 5737)',
  },
  {
    network: '240.0.0.0',
    prefix: 4,
    verdict: 'refused',
    kind: 'a reserved address',
    why: 'reserved (RFC 1112)',
  },
  {
    network: '255.255.255.255',
    prefix: 32,
    verdict: 'refused',
    kind: 'a limited broadcast address',
    why: 'limited broadcast (RFC 919)',
  },
  // IPv4 beyond that registry: a webhook is one connection to one receiver.
  {
    network: '224.0.0.0',
    prefix: 4,
    verdict: 'refused',
    kind: 'a multicast address',
    why: 'multicast (RFC 5771)',
  },

  // IPv6 Special-Purpose Address Registry
  {
    network: '::',
    prefix: 128,
    verdict: 'refused',
    kind: 'an unspecified address',
    why: 'unspecified (RFC 4291)',
  },
  {
    network: '::1',
    prefix: 128,
    verdict: 'refused',
    kind: 'a loopback address',
    why: 'loopback (RFC 4291)',
  },
  {
    network: '::ffff:0:0',
    prefix: 96,
    verdict: lastThirtyTwoBits,
    why: 'IPv4-mapped (RFC 4291): the socket connects to the IPv4 address over IPv4',
  },
  {
    network: '64:ff9b::',
    prefix: 96,
    verdict: lastThirtyTwoBits,
    why: 'NAT64 well-known prefix (RFC 6052): the translator connects to the IPv4 address',
  },
  {
    network: '64:ff9b:1::',
    prefix: 48,
    verdict: 'refused',
    kind: 'a local-use NAT64 address',
    why: 'local-use IPv4/IPv6 translation (RFC 8215)',
  },
  {
    network: '100::',
    prefix: 64,
    verdict: 'refused',
    kind: 'a discard-only address',
    why: 'discard-only (RFC 6666)',
  },
  {
    network: '100:0:0:1::',
    prefix: 64,
    verdict: 'refused',
    kind: 'a dummy IPv6 address',
    why: 'dummy prefix (RFC 9780)',
  },
  {
    network: '2001::',
    prefix: 23,
    verdict: 'refused',
    kind: 'an IETF protocol assignment address',
    why: 'IETF protocol assignments, unusable but for a narrower entry (RFC 2928)',
  },
  {
    network: '2001::',
    prefix: 32,
    verdict: teredoServerAndClient,
    why: 'Teredo (RFC 4380): a relay sends it on to the server and client IPv4 addresses',
  },
  {
    network: '2001:1::1',
    prefix: 128,
    verdict: 'reachable',
    why: 'Port Control Protocol anycast (RFC 7723)',
  },
  { network: '2001:1::2', prefix: 128, verdict: 'reachable', why: 'TURN anycast (RFC 8155)' },
  {
    network: '2001:1::3',
    prefix: 128,
    verdict: 'reachable',
    why: 'DNS-SD service registration anycast (RFC 9665)',
  },
  {
    network: '2001:2::',
    prefix: 48,
    verdict: 'refused',
    kind: 'a benchmarking address',
    why: 'benchmarking (RFC 5180)',
  },
  { network: '2001:3::', prefix: 32, verdict: 'reachable', why: 'AMT (RFC 7450)' },
  { network: '2001:4:112::', prefix: 48, verdict: 'reachable', why: 'AS112-v6 (RFC 7535)' },
  {
    network: '2001:10::',
    prefix: 28,
    verdict: 'refused',
    kind: 'a withdrawn ORCHID address',
    why: 'ORCHID, terminated 2014 (RFC 4843)',
  },
  { network: '2001:20::', prefix: 28, verdict: 'reachable', why: 'ORCHIDv2 (RFC 7343)' },
  {
    network: '2001:30::',
    prefix: 28,
    verdict: 'reachable',
    why: 'drone remote ID entity tags (RFC 9374)',
  },
  {
    network: '2001:db8::',
    prefix: 32,
    verdict: 'refused',
    kind: 'a documentation address',
    why: 'documentation (RFC 3849)',
  },
  {
    network: '2002::',
    prefix: 16,
    verdict: sixToFourBits,
    why: '6to4 (RFC 3056): a relay sends it on to the IPv4 address',
  },
  {
    network: '2620:4f:8000::',
    prefix: 48,
    verdict: 'reachable',
    why: 'AS112 direct delegation (RFC 7534)',
  },
  {
    network: '3fff::',
    prefix: 20,
    verdict: 'refused',
    kind: 'a documentation address',
    why: 'documentation (RFC 9637)',
  },
  {
    network: '5f00::',
    prefix: 16,
    verdict: 'refused',
    kind: 'an SRv6 segment identifier address',
    why: 'SRv6 segment identifiers (RFC 9602)',
  },
  {
    network: 'fc00::',
    prefix: 7,
    verdict: 'refused',
    kind: 'a unique-local address',
    why: 'unique local (RFC 4193; AWS metadata fd00:ec2::254)',
  },
  {
    network: 'fe80::',
    prefix: 10,
    verdict: 'refused',
    kind: 'a link-local address',
    why: 'link-local (RFC 4291)',
  },
  // IPv6 beyond that registry: multicast, and outside global unicast 2000::/3.
  {
    network: '::',
    prefix: 96,
    verdict: 'refused',
    kind: 'an IPv4-compatible address',
    why: 'IPv4-compatible, deprecated (RFC 4291)',
  },
  {
    network: 'fec0::',
    prefix: 10,
    verdict: 'refused',
    kind: 'a site-local address',
    why: 'site-local, deprecated (RFC 3879)',
  },
  {
    network: 'ff00::',
    prefix: 8,
    verdict: 'refused',
    kind: 'a multicast address',
    why: 'multicast (RFC 4291)',
  },
  {
    network: '::',
    prefix: 3,
    verdict: 'refused',
    kind: 'a reserved address',
    why: 'not global unicast: reserved by the IETF (RFC 4291)',
  },
  {
    network: '4000::',
    prefix: 2,
    verdict: 'refused',
    kind: 'a reserved address',
    why: 'not global unicast: reserved by the IETF (RFC 4291)',
  },
  {
    network: '8000::',
    prefix: 1,
    verdict: 'refused',
    kind: 'a reserved address',
    why: 'not global unicast: reserved by the IETF (RFC 4291)',
  },
];

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

/** An address as one number, its width in bits, and (IPv6) its groups. */
interface ParsedAddress {
  readonly width: 32 | 128;
  readonly value: bigint;
  readonly groups: readonly number[];
}

function parseAddress(address: string): ParsedAddress | undefined {
  const family = isIP(address);
  const groups =
    family === 4 ? address.split('.').map(Number) : family === 6 ? groupsOf(address) : undefined;
  if (!groups) return undefined;
  const groupBits = family === 4 ? 8n : 16n;
  const value = groups.reduce((sum, group) => (sum << groupBits) | BigInt(group), 0n);
  return { width: family === 4 ? 32 : 128, value, groups };
}

/** Each block with its network as a number, to match addresses by prefix. */
const blockChecks = ADDRESS_BLOCKS.map((block) => {
  const network = parseAddress(block.network)!;
  return { block, width: network.width, value: network.value };
});

/** The narrowest block that holds an address, if any. */
function narrowestBlockOf(address: ParsedAddress): AddressBlock | undefined {
  let narrowest: AddressBlock | undefined;
  for (const check of blockChecks) {
    if (check.width !== address.width) continue;
    const hostBits = BigInt(check.width - check.block.prefix);
    if (address.value >> hostBits !== check.value >> hostBits) continue;
    if (!narrowest || check.block.prefix > narrowest.prefix) narrowest = check.block;
  }
  return narrowest;
}

/**
 * The block that refuses an address (for one that carries IPv4 addresses, the block that
 * refuses one of them), or undefined when a webhook may reach it.
 */
export function refusedBlockOf(address: string): RefusedBlock | undefined {
  const parsed = parseAddress(address);
  if (!parsed) return undefined;
  const block = narrowestBlockOf(parsed);
  if (!block || block.verdict === 'reachable') return undefined;
  if (block.verdict === 'refused') return block;
  return block
    .verdict(parsed.groups)
    .map((carried) => refusedBlockOf(carried))
    .find((refused) => refused !== undefined);
}
