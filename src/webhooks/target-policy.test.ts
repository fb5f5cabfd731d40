// Which webhook targets are refused: by form, by literal address, by where a name resolves.
import { describe, expect, it } from 'vitest';
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

describe('addresses', () => {
  it.each([
    '127.0.0.1',
    '127.9.9.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.100.100.200', // Alibaba metadata, CGNAT
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254', // AWS metadata (IPv6)
    'fc00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '2002:c0a8:0101::1', // 6to4 of 192.168.1.1
    '::7f00:1', // IPv4-compatible (deprecated) 127.0.0.1, as URLs write [::127.0.0.1]
    '::ffff:0:7f00:1', // IPv4-translated (SIIT) 127.0.0.1
    '::ffff:0:169.254.169.254', // the same, dotted
    '64:ff9b:1::7f00:1', // local-use NAT64 of 127.0.0.1
    '64:ff9b:1:abcd::a9fe:a9fe', // local-use NAT64 (another /96 of the /48) of 169.254.169.254
    '3fff::1', // documentation (RFC 9637)
    '2001::1', // Teredo (2001::/32)
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // a Teredo client
    '2001:2::1', // benchmarking (2001:2::/48)
    '2001:10::1', // ORCHID (deprecated)
    '2001:20::1', // ORCHIDv2
    '2001:1ff:ffff::1', // the last /32 of the IETF protocol assignments (2001::/23)
    '5f00::1', // SRv6 SIDs (RFC 9602)
    '100:0:0:1::1', // dummy prefix (RFC 9780)
    '64:ff9b:1::808:808', // local-use NAT64: not globally reachable, whatever it embeds
    '4000::1', // outside global unicast (2000::/3): reserved by the IETF
    '1:2::3', // the same, in ::/8 but no IPv4 form
    'not an address',
  ])('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700::1111',
    '64:ff9b::808:808',
    '::ffff:808:808', // IPv4-mapped 8.8.8.8
    '::ffff:0:808:808', // IPv4-translated 8.8.8.8
    '2001:200::1', // the first address past 2001::/23: an ordinary allocation
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '3fff:1000::1', // past 3fff::/20
    '2620:4f:8000::1', // AS112 (globally reachable)
  ])('accepts %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });
});

describe('URLs', () => {
  it.each([
    ['http://hooks.example.com/x', 'must be an https URL'],
    ['ftp://hooks.example.com/x', 'must be an https URL'],
    ['https://user:secret@hooks.example.com/', 'must not carry credentials'],
    ['https://hooks.example.com/#part', 'must not have a fragment'],
    ['https://127.0.0.1/', 'must not point to a loopback, private, link-local or metadata address'],
    [
      'https://[::1]:8443/',
      'must not point to a loopback, private, link-local or metadata address',
    ],
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
    expect(
      await checkTargetAddresses(url, strict, resolving('93.184.216.34', '10.0.0.5')),
    ).toContain('resolves to a loopback, private, link-local or metadata address');
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
  const lookup = (resolver: Resolver, options: { all?: boolean; family?: number } = {}) =>
    new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
      guardedLookup(strict, resolver)('hooks.example.com', options, (error, address, family) =>
        resolve({ error, address, family }),
      ),
    );

  it('hands the connection exactly the addresses it checked', async () => {
    expect(await lookup(resolving('93.184.216.34'))).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
    expect(
      (await lookup(resolving('93.184.216.34', '2606:4700::1111'), { all: true })).address,
    ).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it('refuses a name that now resolves to a private address (DNS rebinding)', async () => {
    const { error } = await lookup(resolving('127.0.0.1'));
    expect(error).toBeInstanceOf(TargetRefusedError);
    expect(error!.message).toContain('hooks.example.com');
  });
});
