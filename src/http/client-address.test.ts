// TRUSTED_PROXIES and X-Forwarded-For: which address a request counts as from.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { canonicalAddress, clientAddress, parseTrustedProxies } from './client-address.js';

const trusted = (text: string) => {
  const parsed = parseTrustedProxies(text);
  if (!parsed.ok || parsed.trusted === undefined) throw new Error('no proxies');
  return parsed.trusted;
};

describe('the client address', () => {
  const proxies = trusted('10.0.0.0/8, 192.0.2.1, fd00::/8');

  it('is the peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('198.51.100.7', '203.0.113.9', undefined)).toBe('198.51.100.7');
  });

  it('is the peer when the peer is not a trusted proxy (the header is the client’s own)', () => {
    expect(clientAddress('198.51.100.7', '203.0.113.9', proxies)).toBe('198.51.100.7');
    expect(clientAddress('::ffff:198.51.100.7', '203.0.113.9', proxies)).toBe('198.51.100.7');
  });

  it('is the rightmost forwarded address that is not a trusted proxy', () => {
    expect(clientAddress('10.1.2.3', '203.0.113.9', proxies)).toBe('203.0.113.9');
    // the client wrote 1.1.1.1 itself; the proxies appended the rest
    expect(clientAddress('10.1.2.3', '1.1.1.1, 203.0.113.9, 10.9.9.9', proxies)).toBe(
      '203.0.113.9',
    );
    expect(clientAddress('::ffff:192.0.2.1', '2001:db8::5', proxies)).toBe('2001:db8::5');
    expect(clientAddress('fd00::1', '::ffff:203.0.113.9', proxies)).toBe('203.0.113.9');
  });

  it('stops at an entry that is not an address, and takes the peer', () => {
    expect(clientAddress('10.1.2.3', '203.0.113.9, unknown', proxies)).toBe('10.1.2.3');
    expect(clientAddress('10.1.2.3', '', proxies)).toBe('10.1.2.3');
  });

  it('drops the port and the brackets some proxies write, and chooses the same entry', () => {
    for (const [forwarded, client] of [
      ['203.0.113.7:51234', '203.0.113.7'],
      ['[2001:db8::1]:51234', '2001:db8::1'],
      ['[2001:db8::1]', '2001:db8::1'],
      ['[::ffff:203.0.113.7]:443', '203.0.113.7'],
      [' 203.0.113.7:0 ', '203.0.113.7'],
      // the rightmost untrusted entry, ports or not on the trusted hops to its right
      ['1.1.1.1:1, 203.0.113.9:2, 10.9.9.9:3', '203.0.113.9'],
      ['garbage, 203.0.113.9:2', '203.0.113.9'],
    ] as const) {
      expect(clientAddress('10.1.2.3', forwarded, proxies)).toBe(client);
    }
    expect(clientAddress('10.1.2.3', '10.4.5.6:80, [fd00::9]:81', proxies)).toBe('10.4.5.6');
  });

  it('still takes the peer for an entry that is no address, with a port or brackets or not', () => {
    for (const forwarded of [
      '203.0.113.7:65536',
      '203.0.113.7:',
      '203.0.113.7:80:80',
      ':51234',
      '[203.0.113.7]:80',
      '[2001:db8::1]:',
      '[2001:db8::1',
      '2001:db8::1]:80',
      '[2001:db8::1]:123456',
      'unknown:80',
      '[unknown]',
      '999.0.113.7:80',
      '203.0.113.9, 203.0.113.7:x',
    ]) {
      expect(clientAddress('10.1.2.3', forwarded, proxies)).toBe('10.1.2.3');
    }
  });

  it('neither lets a client pick its address nor takes odd entries for one', () => {
    // a zone, a tab, an empty entry, leading zeros, an IPv4 address in brackets
    expect(clientAddress('10.1.2.3', '203.0.113.9, fe80::1%eth0', proxies)).toBe('fe80::1%eth0');
    expect(clientAddress('10.1.2.3', '198.51.100.1, 203.0.113.9\t', proxies)).toBe('203.0.113.9');
    for (const forwarded of [
      '203.0.113.9,,10.9.9.9',
      '203.0.113.9, 010.1.1.1',
      '203.0.113.9, [10.9.9.9]',
      '203.0.113.9, fe80::1%a b',
      `${'1.1.1.1, '.repeat(1000)}x`,
    ]) {
      expect(clientAddress('10.1.2.3', forwarded, proxies)).toBe('10.1.2.3');
    }
    // what the client wrote to the left of the proxies' entries is never chosen
    expect(clientAddress('10.1.2.3', '198.51.100.1, 203.0.113.9:80, [fd00::9]:1', proxies)).toBe(
      '203.0.113.9',
    );
  });

  it('is the leftmost address when every hop is a trusted proxy', () => {
    expect(clientAddress('10.1.2.3', '10.4.5.6, 10.7.8.9', proxies)).toBe('10.4.5.6');
  });
});

describe('the canonical form of an address (decision 472)', () => {
  it('is the IPv4 address of an IPv4 address mapped into IPv6, in each of its forms', () => {
    for (const mapped of [
      '::ffff:198.51.100.7',
      '::FFFF:198.51.100.7',
      '::ffff:c633:6407',
      '::FFFF:C633:6407',
      '0:0:0:0:0:ffff:c633:6407',
      '0:0:0:0:0:ffff:198.51.100.7',
      // as uWebSockets.js gives a dual-stack listener's IPv4 peer
      '0000:0000:0000:0000:0000:ffff:c633:6407',
      '0000:0000:0000:0000:0000:FFFF:198.51.100.7',
      '::0:ffff:c633:6407',
      '::ffff:198.51.100.7%eth0',
    ]) {
      expect(canonicalAddress(mapped)).toBe('198.51.100.7');
    }
    expect(canonicalAddress('::ffff:0:0')).toBe('0.0.0.0');
    expect(canonicalAddress('::ffff:ffff:ffff')).toBe('255.255.255.255');
  });

  it('is one text of an IPv6 address, whichever it was written in (RFC 5952)', () => {
    for (const [written, canonical] of [
      ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
      ['2001:DB8::1', '2001:db8::1'],
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
      ['0000:0000:0000:0000:0000:0000:0000:0001', '::1'],
      ['::', '::'],
      ['1:0:0:0:0:0:0:0', '1::'],
      ['2001:db8::1.2.3.4', '2001:db8::102:304'],
      ['fe80::0001%eth0', 'fe80::1%eth0'],
      // not mapped: an address beside ::ffff:0:0/96 stays IPv6
      ['0:0:0:0:1:ffff:c633:6407', '::1:ffff:c633:6407'],
      ['64:ff9b::c633:6407', '64:ff9b::c633:6407'],
    ] as const) {
      expect(canonicalAddress(written)).toBe(canonical);
    }
  });

  it('leaves IPv4 and what is no address as they are', () => {
    for (const text of ['198.51.100.7', '', 'unknown', '::ffff:999.1.1.1']) {
      expect(canonicalAddress(text)).toBe(text);
    }
  });

  it('is what the client address is, the peer’s or a forwarded one', () => {
    const uwsPeer = '0000:0000:0000:0000:0000:ffff:c633:6407';
    expect(clientAddress(uwsPeer, undefined, undefined)).toBe('198.51.100.7');
    expect(clientAddress('2001:0db8:0000:0000:0000:0000:0000:0001', undefined, undefined)).toBe(
      '2001:db8::1',
    );
    // a proxy at 10.1.2.3 on a dual-stack listener is still the trusted proxy
    const proxies = trusted('10.0.0.0/8');
    expect(clientAddress('0000:0000:0000:0000:0000:ffff:0a01:0203', uwsPeer, proxies)).toBe(
      '198.51.100.7',
    );
    expect(clientAddress('10.1.2.3', '[2001:DB8:0:0::1]:80', proxies)).toBe('2001:db8::1');
  });
});

describe('TRUSTED_PROXIES', () => {
  it('takes addresses and CIDR ranges of both families; empty means none', () => {
    expect(parseTrustedProxies('')).toEqual({ ok: true, trusted: undefined });
    const matcher = trusted('127.0.0.1,172.16.0.0/12,::1,2001:db8::/32,');
    expect(['127.0.0.1', '172.31.255.255', '::1', '2001:db8:ffff::1'].map(matcher)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['127.0.0.2', '172.32.0.0', '::2', '2001:db9::1', 'nonsense'].map(matcher)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('refuses what is not an address or a range, naming its position and not its text', () => {
    for (const [text, entry] of [
      ['10.0.0.0/33', 2],
      ['proxy.internal', 1],
      ['10.0.0.1/8/2', 1],
      ['::1/129', 1],
      ['10.0.0.1/x', 1],
    ] as const) {
      const value = text === '10.0.0.0/33' ? `127.0.0.1,${text}` : text;
      expect(parseTrustedProxies(value)).toEqual({ ok: false, entry });
      expect(() => loadConfig({ ...process.env, TRUSTED_PROXIES: value })).toThrow(
        new RegExp(`TRUSTED_PROXIES: entry ${entry} is not an address or a CIDR range`),
      );
    }
  });
});
