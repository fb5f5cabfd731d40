// The sign-in and sign-up throttles count an IPv6 client by its /64 (one host holds a whole
// /64 and can send from any address in it) and an IPv4 client by its address, however the
// listener writes it (dual-stack listeners give IPv4 peers as ::ffff:a.b.c.d), against the
// real Redis.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { LoginThrottle, mailboxOf, throttledClient } from '../src/accounts/login-throttle.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('throttle-addr');
const redis = testRedis();
const keys = createRedisKeys(prefix);
const throttle = new LoginThrottle(redis, keys, {
  perAccount: 1000,
  perAddress: 3,
  signupsPerAddress: 3,
  windowMs: 60_000,
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
});

/** An address as uWebSockets.js writes a peer's: eight zero-padded groups. */
const hostIn64 = (network: string): string =>
  `${network}:${Array.from({ length: 4 }, () => randomBytes(2).toString('hex')).join(':')}`;
const someone = (): string => `someone-${randomBytes(4).toString('hex')}@example.com`;

describe('the address the throttles count', () => {
  it('is the /64 of an IPv6 client: a host that moves around its /64 is still held back', async () => {
    const network = `2001:0db8:${randomBytes(2).toString('hex')}:0001`;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect(await throttle.attempt(someone(), hostIn64(network))).toBe(0);
    }
    expect(await throttle.attempt(someone(), hostIn64(network))).toBeGreaterThan(0);
    // another /64 is another client
    expect(await throttle.attempt(someone(), hostIn64(`${network.slice(0, -4)}0002`))).toBe(0);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect(await throttle.signupAttempt(hostIn64(network))).toBe(0);
    }
    expect(await throttle.signupAttempt(hostIn64(network))).toBeGreaterThan(0);
  });

  it('is the /64 of an IPv6 client in any text form, as a proxy forwards it (decision 444)', async () => {
    const group = randomBytes(2).toString('hex').replace(/^0+/, '') || '1';
    const forms = [
      `2001:db8:${group}:1::1`,
      `2001:DB8:${group}:1:0:0:0:2`,
      `2001:0db8:${group}:0001:ffff::9.9.9.9`,
    ];
    for (const form of forms) expect(await throttle.attempt(someone(), form)).toBe(0);
    expect(
      await throttle.attempt(someone(), hostIn64(`2001:0db8:${group.padStart(4, '0')}:0001`)),
    ).toBeGreaterThan(0);
    expect(
      await redis.exists(
        keys.loginFailures('address', `2001:0db8:${group.padStart(4, '0')}:0001::/64`),
      ),
    ).toBe(1);
  });

  it('is the IPv4 address of a client a dual-stack listener gives as ::ffff:a.b.c.d', async () => {
    const last = Math.floor(Math.random() * 250) + 1;
    const mapped = `0000:0000:0000:0000:0000:ffff:c000:02${last.toString(16).padStart(2, '0')}`;
    expect(await throttle.attempt(someone(), `192.0.2.${last}`)).toBe(0);
    expect(await throttle.attempt(someone(), mapped)).toBe(0);
    expect(await throttle.attempt(someone(), `192.0.2.${last}`)).toBe(0);
    expect(await throttle.attempt(someone(), mapped)).toBeGreaterThan(0);
    expect(await throttle.attempt(someone(), `::FFFF:192.0.2.${last}`)).toBeGreaterThan(0);
    // its neighbour is not held back
    expect(await throttle.attempt(someone(), `192.0.2.${last === 1 ? 2 : last - 1}`)).toBe(0);
    expect(await redis.exists(keys.loginFailures('address', `192.0.2.${last}`))).toBe(1);
  });

  it('expands every IPv6 text form to the same /64, and tells neighbouring /64s apart', () => {
    for (const [form, client] of [
      ['::', '0000:0000:0000:0000::/64'],
      ['1:2:3:4:5:6:7::', '0001:0002:0003:0004::/64'],
      ['::1:2:3:4:5:6:7', '0000:0001:0002:0003::/64'],
      ['2001:db8:0:1::', '2001:0db8:0000:0001::/64'],
      ['2001:db8::1:0:0:1', '2001:0db8:0000:0000::/64'],
      ['FE80::1%eth0', 'fe80:0000:0000:0000::/64'],
      ['fe80::1%1.2.3.4', 'fe80:0000:0000:0000::/64'],
      ['2001:db8:1:2::1.2.3.4', '2001:0db8:0001:0002::/64'],
      ['1:2:3:4:5:6:1.2.3.4', '0001:0002:0003:0004::/64'],
      ['::ffff:0102:0304', '1.2.3.4'],
      ['::ffff:255.255.255.255', '255.255.255.255'],
      ['::ffff:128.0.0.1', '128.0.0.1'],
    ] as const) {
      expect(throttledClient(form)).toBe(client);
    }
  });

  it('counts mail to name+tag@host as mail to name@host, and nothing else as it (decision 460)', () => {
    expect(mailboxOf('ann+gw@example.com')).toBe('ann@example.com');
    expect(mailboxOf('ann+a+b@example.com')).toBe('ann@example.com');
    expect(mailboxOf('ann@example.com')).toBe('ann@example.com');
    // no name before the plus, or a plus after the @: the address as it is
    expect(mailboxOf('+ann@example.com')).toBe('+ann@example.com');
    expect(mailboxOf('ann@ex+ample.com')).toBe('ann@ex+ample.com');
  });

  it("counts Gmail's dotted names and its other domain as the one mailbox (decision 490)", () => {
    for (const address of [
      'v.ictim@gmail.com',
      'vi.c.tim+1@gmail.com',
      'victim@googlemail.com',
      'V.Ictim@GMail.com',
    ]) {
      expect(mailboxOf(address), address).toBe('victim@gmail.com');
    }
    // dots elsewhere are names of their own
    expect(mailboxOf('v.ictim@example.com')).toBe('v.ictim@example.com');
    expect(mailboxOf('...@gmail.com')).toBe('...@gmail.com');
  });

  it('is the IPv4 client a translator embeds in 64:ff9b::/96, not one /64 for every IPv4 client (decision 454)', async () => {
    // Behind a stateless translator (SIIT-DC, RFC 7755) an IPv6-only gateway sees each IPv4
    // client as 64:ff9b::a.b.c.d: as a /64, they were all one client, and one guesser's five
    // wrong passwords held every IPv4 user out of the account.
    expect(throttledClient('64:ff9b::203.0.113.7')).toBe('203.0.113.7');
    expect(throttledClient('64:FF9B::cb00:7108')).toBe('203.0.113.8');
    expect(throttledClient('0064:ff9b:0000:0000:0000:0000:cb00:7109')).toBe('203.0.113.9');
    // the local-use prefix and addresses beside the /96 are IPv6 clients as any other
    expect(throttledClient('64:ff9b:1::cb00:7107')).toBe('0064:ff9b:0001:0000::/64');
    expect(throttledClient('64:ff9b::1:cb00:7107')).toBe('0064:ff9b:0000:0000::/64');
    // five wrong passwords from one IPv4 client leave another its own guesses
    const defaults = new LoginThrottle(redis, keys);
    const email = someone();
    const guesser = `64:ff9b::203.0.${randomBytes(1)[0]}.7`;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(await defaults.attempt(email, guesser)).toBe(0);
    }
    expect(await defaults.attempt(email, guesser)).toBeGreaterThan(0);
    expect(await defaults.attempt(email, '64:ff9b::198.51.100.7')).toBe(0);
  });
});
