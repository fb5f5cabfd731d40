// Which webhook targets are refused: by form, by literal address, by where a name resolves;
// each boundary of the address blocks (address-blocks.ts) through all three.
import { describe, expect, it } from 'vitest';
import { ADDRESS_BLOCKS, refusedBlockOf } from './address-blocks.js';
import {
  checkTargetAddresses,
  checkTargetUrl,
  guardedLookup,
  isRefusedAddress,
  TargetRefusedError,
  type Resolver,
} from './target-policy.js';

const strict = { allowHttp: false, allowPrivate: false };
const resolving =
  (...addresses: string[]): Resolver =>
  () =>
    Promise.resolve(
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

const urlNaming = (address: string): string =>
  address.includes(':') ? `https://[${address}]/in` : `https://${address}/in`;

const lookupOf = (resolver: Resolver, options: { all?: boolean; family?: number } = {}) =>
  new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
    guardedLookup(strict, resolver)('hooks.example.com', options, (error, address, family) =>
      resolve({ error, address, family }),
    ),
  );

describe('address blocks: each boundary, alike as a URL literal and as a DNS answer (decision 391)', () => {
  // [address, why the block that refuses it says (a fragment), or null: a webhook may reach it].
  // Around each block: the last address before it, its first, its last, the first after it.
  it.each<[string, string | null]>([
    // IPv4: "this" network, CGNAT
    ['0.0.0.0', '"this" host'],
    ['0.0.0.1', '"this" network'],
    ['0.255.255.255', '"this" network'],
    ['1.0.0.0', null],
    ['8.8.8.8', null],
    ['100.63.255.255', null],
    ['100.64.0.0', 'carrier-grade NAT'],
    ['100.100.100.200', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.128.0.0', null],
    ['126.255.255.255', null],
    ['127.0.0.0', 'loopback'],
    ['127.255.255.255', 'loopback'],
    ['128.0.0.0', null],
    ['169.254.169.254', 'link-local'],
    ['172.15.255.255', null],
    ['172.16.0.0', 'private use'],
    ['172.31.255.255', 'private use'],
    ['172.32.0.0', null],
    // IPv4: 192.0.0.0/24, refused but for PCP and TURN anycast
    ['191.255.255.255', null],
    ['192.0.0.0', 'DS-Lite'],
    ['192.0.0.7', 'DS-Lite'],
    ['192.0.0.8', 'dummy'],
    ['192.0.0.9', null],
    ['192.0.0.10', null],
    ['192.0.0.11', 'IETF protocol assignments'],
    ['192.0.0.169', 'IETF protocol assignments'],
    ['192.0.0.170', 'NAT64/DNS64 discovery'],
    ['192.0.0.171', 'NAT64/DNS64 discovery'],
    ['192.0.0.172', 'IETF protocol assignments'],
    ['192.0.0.255', 'IETF protocol assignments'],
    ['192.0.1.0', null],
    ['192.0.2.0', 'TEST-NET-1'],
    ['192.0.2.255', 'TEST-NET-1'],
    ['192.31.196.0', null], // AS112-v4
    ['192.31.196.255', null],
    ['192.52.193.0', null], // AMT
    ['192.52.193.255', null],
    ['192.88.98.255', null],
    ['192.88.99.0', '6to4 relay anycast'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.88.99.2', '6a44'],
    ['192.88.99.3', '6to4 relay anycast'],
    ['192.88.99.255', '6to4 relay anycast'],
    ['192.88.100.0', null],
    ['192.167.255.255', null],
    ['192.168.0.0', 'private use'],
    ['192.168.255.255', 'private use'],
    ['192.169.0.0', null],
    ['192.175.48.0', null], // AS112 direct delegation
    ['192.175.48.255', null],
    // IPv4: benchmarking, documentation, multicast, reserved, broadcast
    ['198.17.255.255', null],
    ['198.18.0.0', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.20.0.0', null],
    ['198.51.100.0', 'TEST-NET-2'],
    ['198.51.100.255', 'TEST-NET-2'],
    ['203.0.113.0', 'TEST-NET-3'],
    ['203.0.113.255', 'TEST-NET-3'],
    ['223.255.255.255', null],
    ['224.0.0.0', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.0', 'reserved (RFC 1112)'],
    ['255.255.255.254', 'reserved (RFC 1112)'],
    ['255.255.255.255', 'limited broadcast'],
    // IPv6 below global unicast: unspecified, loopback, IPv4-compatible, IPv4-mapped
    ['::', 'unspecified'],
    ['::1', 'loopback (RFC 4291)'],
    ['::2', 'IPv4-compatible'],
    ['::7f00:1', 'IPv4-compatible'], // [::127.0.0.1] in a URL
    ['::808:808', 'IPv4-compatible'], // whatever it carries
    ['::ffff:ffff', 'IPv4-compatible'],
    ['::1:0:0', 'not global unicast'],
    ['::fffe:ffff:ffff', 'not global unicast'],
    ['::ffff:0.0.0.0', '"this" host'], // IPv4-mapped: judged by the IPv4 address
    ['::ffff:8.8.8.8', null],
    ['::ffff:192.0.0.9', null],
    ['::ffff:192.0.0.8', 'dummy'],
    ['::ffff:127.0.0.1', 'loopback (RFC 1122)'],
    ['::ffff:10.1.2.3', 'private use'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:255.255.255.255', 'limited broadcast'],
    ['::1:0:0:0', 'not global unicast'],
    ['::ffff:7f00:1', 'loopback (RFC 1122)'], // the same, in hex
    ['::ffff:0:808:808', 'not global unicast'], // IPv4-translated (SIIT), obsolete
    ['::ffff:0:7f00:1', 'not global unicast'],
    // IPv6: NAT64, judged by the IPv4 address; local-use NAT64 refused whatever it carries
    ['64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast'],
    ['64:ff9b::', '"this" host'],
    ['64:ff9b::808:808', null],
    ['64:ff9b::7f00:1', 'loopback (RFC 1122)'],
    ['64:ff9b::a00:1', 'private use'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::6440:1', 'carrier-grade NAT'],
    ['64:ff9b::c000:9', null], // 192.0.0.9
    ['64:ff9b::ffff:ffff', 'limited broadcast'],
    ['64:ff9b::1:0:0', 'not global unicast'],
    ['64:ff9b:0:ffff:ffff:ffff:ffff:ffff', 'not global unicast'],
    ['64:ff9b:1::', 'local-use IPv4/IPv6 translation'],
    ['64:ff9b:1::808:808', 'local-use IPv4/IPv6 translation'],
    ['64:ff9b:1:abcd::a9fe:a9fe', 'local-use IPv4/IPv6 translation'],
    ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'local-use IPv4/IPv6 translation'],
    ['64:ff9b:2::', 'not global unicast'],
    ['100::', 'discard-only'],
    ['100::ffff:ffff:ffff:ffff', 'discard-only'],
    ['100:0:0:1::', 'dummy prefix'],
    ['100:0:0:1:ffff:ffff:ffff:ffff', 'dummy prefix'],
    ['100:0:0:2::', 'not global unicast'],
    ['1:2::3', 'not global unicast'],
    ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast'],
    ['2000::', null],
    ['2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    // IPv6: 2001::/23, refused but for its globally reachable entries. Teredo is judged by
    // its server (bits 32-63) and its client (the last 32 bits, inverted).
    ['2001::', '"this" host'], // Teredo, server 0.0.0.0
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', null], // server 65.54.227.120, client 8.8.8.8
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback (RFC 1122)'], // client 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private use'], // client 10.0.0.1
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'TEST-NET-1'], // RFC 4380's example: 192.0.2.45
    ['2001:0:a00:1::f7f7:f7f7', 'private use'], // server 10.0.0.1
    ['2001:0:a9fe:a9fe::f7f7:f7f7', 'link-local'], // server 169.254.169.254
    ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff', 'limited broadcast'], // server 255.255.255.255
    ['2001:1::', 'IETF protocol assignments'],
    ['2001:1::1', null], // PCP anycast
    ['2001:1::2', null], // TURN anycast
    ['2001:1::3', null], // DNS-SD service registration anycast
    ['2001:1::4', 'IETF protocol assignments'],
    ['2001:1:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignments'],
    ['2001:2::', 'benchmarking (RFC 5180)'],
    ['2001:2:0:ffff:ffff:ffff:ffff:ffff', 'benchmarking (RFC 5180)'],
    ['2001:2:1::', 'IETF protocol assignments'],
    ['2001:2:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignments'],
    ['2001:3::', null], // AMT
    ['2001:3:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:4::', 'IETF protocol assignments'],
    ['2001:4:111:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignments'],
    ['2001:4:112::', null], // AS112-v6
    ['2001:4:112:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:4:113::', 'IETF protocol assignments'],
    ['2001:f:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignments'],
    ['2001:10::', 'ORCHID, terminated'],
    ['2001:1f:ffff:ffff:ffff:ffff:ffff:ffff', 'ORCHID, terminated'],
    ['2001:20::', null], // ORCHIDv2
    ['2001:2f:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:30::', null], // drone remote ID entity tags
    ['2001:3f:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:40::', 'IETF protocol assignments'],
    ['2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignments'],
    ['2001:200::', null],
    ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2001:db8::', 'documentation (RFC 3849)'],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation (RFC 3849)'],
    ['2001:db9::', null],
    // IPv6: 6to4, judged by the IPv4 address in bits 16-47
    ['2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['2002::', '"this" host'],
    ['2002:808:808::1', null],
    ['2002:7f00:1::1', 'loopback (RFC 1122)'],
    ['2002:c0a8:101::1', 'private use'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'limited broadcast'],
    ['2003::', null],
    ['2606:4700::1111', null],
    ['2620:4f:8000::', null], // AS112 direct delegation
    ['2620:4f:8000:ffff:ffff:ffff:ffff:ffff', null],
    ['3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['3fff::', 'documentation (RFC 9637)'],
    ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation (RFC 9637)'],
    ['3fff:1000::', null],
    ['3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    // IPv6 above global unicast
    ['4000::', 'not global unicast'],
    ['5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast'],
    ['5f00::', 'SRv6'],
    ['5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'SRv6'],
    ['5f01::', 'not global unicast'],
    ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'not global unicast'],
    ['fc00::', 'unique local'],
    ['fd00:ec2::254', 'unique local'], // AWS metadata
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique local'],
    ['fe00::', 'not global unicast'],
    ['fe80::', 'link-local (RFC 4291)'],
    ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local (RFC 4291)'],
    ['fec0::', 'site-local'],
    ['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'site-local'],
    ['ff00::', 'multicast (RFC 4291)'],
    ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'multicast (RFC 4291)'],
  ])('%s: %s', async (address, refusedBecause) => {
    const refused = refusedBecause !== null;
    const block = refusedBlockOf(address);
    expect(block?.why ?? null).toEqual(refused ? expect.stringContaining(refusedBecause) : null);
    expect(isRefusedAddress(address)).toBe(refused);
    // Each refusal names the kind of address and the block that refuses it.
    const named = block && `${block.kind} in ${block.network}/${block.prefix}`;
    // A literal in the URL, when the endpoint is saved and when a delivery starts.
    const checked = checkTargetUrl(urlNaming(address), strict);
    expect(typeof checked === 'string' ? checked : 'accepted').toBe(
      refused ? `must not point to ${named}` : 'accepted',
    );
    // A DNS answer when the endpoint is saved...
    const url = new URL('https://hooks.example.com/in');
    expect(await checkTargetAddresses(url, strict, resolving(address))).toBe(
      refused ? `resolves to ${named} (hooks.example.com)` : null,
    );
    // ...and when a delivery connects.
    const { error, address: connectedTo } = await lookupOf(resolving(address));
    expect(error === null || error instanceof TargetRefusedError).toBe(true);
    expect(error?.message ?? null).toBe(refused ? `hooks.example.com: resolves to ${named}` : null);
    expect(connectedTo).toBe(refused ? '' : address);
  });

  it('refuses what is not an address, and reads a zone or a dotted tail', () => {
    expect(isRefusedAddress('not an address')).toBe(true);
    expect(isRefusedAddress('127.1')).toBe(true);
    expect(refusedBlockOf('fe80::1%eth0')?.why).toContain('link-local');
    expect(refusedBlockOf('2001:3::1%2')).toBeUndefined();
    expect(refusedBlockOf('64:ff9b::127.0.0.1')?.why).toContain('loopback');
  });

  it.each([
    ['192.0.2.1', 'a documentation address in 192.0.2.0/24'],
    ['3fff::1', 'a documentation address in 3fff::/20'],
    ['198.18.0.1', 'a benchmarking address in 198.18.0.0/15'],
    ['100.100.100.200', 'a shared (carrier-grade NAT) address in 100.64.0.0/10'],
    ['169.254.169.254', 'a link-local address in 169.254.0.0/16'],
    ['10.0.0.5', 'a private-use address in 10.0.0.0/8'],
    ['::1', 'a loopback address in ::1/128'],
    ['64:ff9b:1::1', 'a local-use NAT64 address in 64:ff9b:1::/48'],
    ['4000::1', 'a reserved address in 4000::/2'],
    // An address that carries an IPv4 address is named by the block refusing that one.
    ['64:ff9b::7f00:1', 'a loopback address in 127.0.0.0/8'],
    ['::ffff:192.168.1.1', 'a private-use address in 192.168.0.0/16'],
  ])('names why %s is refused: %s', async (address, named) => {
    expect(checkTargetUrl(urlNaming(address), strict)).toBe(`must not point to ${named}`);
    const url = new URL('https://hooks.example.com/in');
    expect(await checkTargetAddresses(url, strict, resolving('93.184.216.34', address))).toBe(
      `resolves to ${named} (hooks.example.com)`,
    );
    expect((await lookupOf(resolving(address))).error?.message).toBe(
      `hooks.example.com: resolves to ${named}`,
    );
  });

  it('names each refused block with a kind of address', () => {
    const kinds = ADDRESS_BLOCKS.flatMap((block) =>
      block.verdict === 'refused' ? [block.kind] : [],
    );
    expect(kinds.filter((kind) => !/^an? [\w(). /-]+ address$/.test(kind))).toEqual([]);
  });

  it('lists each block once', () => {
    const keys = ADDRESS_BLOCKS.map((block) => `${block.network}/${block.prefix}`);
    expect(keys.filter((key, index) => keys.indexOf(key) !== index)).toEqual([]);
  });
});

describe('URLs', () => {
  it.each([
    ['http://hooks.example.com/x', 'must be an https URL'],
    ['ftp://hooks.example.com/x', 'must be an https URL'],
    ['https://user:secret@hooks.example.com/', 'must not carry credentials'],
    ['https://hooks.example.com/#part', 'must not have a fragment'],
    ['https://127.0.0.1/', 'must not point to a loopback address in 127.0.0.0/8'],
    ['https://[::1]:8443/', 'must not point to a loopback address in ::1/128'],
    ['https://169.254.169.254/latest/meta-data', 'must not point'],
    ['https://0x7f000001/', 'must not point'], // the URL parser reads it as 127.0.0.1
    ['https://[::127.0.0.1]/', 'must not point'], // written back as [::7f00:1]
    ['https://[64:ff9b:1::127.0.0.1]/', 'must not point'],
    ['https://[2001::1]/', 'must not point'],
    ['https://[5f00::1]/', 'must not point'],
    ['https://hooks.example.com:0/', 'must not use port 0'],
    ['https://127.0.0.1:0/', 'must not use port 0'],
    ['not a url', 'is not a URL'],
    [`https://example.com/${'a'.repeat(2048)}`, 'must be at most 2048 characters'],
  ])('refuses %s', (url, reason) => {
    const checked = checkTargetUrl(url, strict);
    expect(typeof checked).toBe('string');
    expect(checked).toContain(reason);
  });

  it('accepts https, and http or private addresses only where config allows', () => {
    expect(checkTargetUrl('https://hooks.example.com/in?x=1', strict)).toBeInstanceOf(URL);
    expect(checkTargetUrl('https://hooks.example.com:8443/in', strict)).toBeInstanceOf(URL);
    expect(checkTargetUrl('http://127.0.0.1:0/', { allowHttp: true, allowPrivate: true })).toBe(
      'must not use port 0',
    );
    expect(
      checkTargetUrl('http://127.0.0.1:9/', { allowHttp: true, allowPrivate: true }),
    ).toBeInstanceOf(URL);
    expect(
      checkTargetUrl('http://127.0.0.1:9/', { allowHttp: true, allowPrivate: false }),
    ).toContain('must not point');
  });

  it('refuses a name that resolves to a refused address (any of them), accepts one that does not resolve', async () => {
    const url = new URL('https://hooks.example.com/');
    expect(await checkTargetAddresses(url, strict, resolving('93.184.216.34'))).toBeNull();
    expect(await checkTargetAddresses(url, strict, resolving('93.184.216.34', '10.0.0.5'))).toBe(
      'resolves to a private-use address in 10.0.0.0/8 (hooks.example.com)',
    );
    expect(
      await checkTargetAddresses(url, strict, () => Promise.reject(new Error('ENOTFOUND'))),
    ).toBeNull();
    expect(
      await checkTargetAddresses(
        url,
        { allowHttp: false, allowPrivate: true },
        resolving('10.0.0.5'),
      ),
    ).toBeNull();
  });
});

describe('the connection-time lookup', () => {
  it('hands the connection exactly the addresses it checked', async () => {
    expect(await lookupOf(resolving('93.184.216.34'))).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
    expect(
      (await lookupOf(resolving('93.184.216.34', '2606:4700::1111'), { all: true })).address,
    ).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it('refuses a name that now resolves to a private address (DNS rebinding)', async () => {
    const { error } = await lookupOf(resolving('127.0.0.1'));
    expect(error).toBeInstanceOf(TargetRefusedError);
    expect(error!.message).toContain('hooks.example.com');
  });
});
