// Failed sign-ins are counted in Redis (shared by every instance) per account and client
// address, per account over every client, and per client address over every account; past a
// limit a sign-in is refused without checking the password until the window ends (429
// gw_too_many_attempts with Retry-After). Each attempt is counted before its password is
// checked, and a success takes its count back. Nobody can lock an account's owner out from
// another address (decision 414): a client's own failures stop it alone, and past the
// account's ceiling only a client with no failure there in the window gets one guess.
// Self-service sign-ups are counted per client address the same way, every attempt. Requests
// that may e-mail an address count per (address, client), and those a client's own share lets
// through against the address's ceiling: nobody can flood a mailbox, nor use up its allowance
// from one client and so keep its owner from a reset link (decision 450). An IPv6 client is
// counted by its /64.
import { isIP } from 'node:net';
import { gwError, type GwError } from '../errors.js';
import { canonicalAddress, embeddedIpv4, ipv6Groups } from '../http/client-address.js';
import type { RedisClient } from '../redis/connect.js';
import { sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';

export interface ThrottleLimits {
  /** Failed sign-ins at one account from one client address. */
  readonly perAccountClient: number;
  /**
   * Failed sign-ins at one account from every client: past it, a client that failed there
   * in the window waits, and one that did not gets one guess (so the owner still signs in).
   */
  readonly perAccount: number;
  /** Failed sign-ins from one client address at every account. */
  readonly perAddress: number;
  /** Self-service sign-ups (every attempt, successful or not) per client address. */
  readonly signupsPerAddress: number;
  /**
   * Requests that may e-mail one address (sign-ups, resends, reset requests) from one client
   * address; those past it do not count against `emailsPerRecipient`.
   */
  readonly emailsPerRecipientClient: number;
  /** Requests that may e-mail one address, from every client: the mailbox's bound. */
  readonly emailsPerRecipient: number;
  /** Password-reset requests, and uses of e-mailed links (reset, verification), per client address. */
  readonly resetRequestsPerAddress: number;
  readonly linkUsesPerAddress: number;
  readonly windowMs: number;
}

export const DEFAULT_THROTTLE_LIMITS: ThrottleLimits = {
  perAccountClient: 5,
  perAccount: 20,
  perAddress: 50,
  signupsPerAddress: 10,
  emailsPerRecipientClient: 3,
  emailsPerRecipient: 10,
  resetRequestsPerAddress: 20,
  linkUsesPerAddress: 20,
  windowMs: 15 * 60_000,
};

/**
 * The answer to an attempt the throttle holds back for `waitMs`: 429 with Retry-After, the
 * wait rounded up to whole seconds. `attempts` names what was counted (`sign-ups`).
 */
export function tooManyAttempts(attempts: string, waitMs: number): GwError {
  const retryAfterS = Math.ceil(waitMs / 1000);
  return gwError('gw_too_many_attempts', `too many ${attempts}; try again in ${retryAfterS} s`, {
    headers: { 'retry-after': String(retryAfterS) },
  });
}

/** A per-client hash's field for every client's count (no client address looks like it). */
const ALL_CLIENTS = 'all';

/**
 * 64:ff9b::/96, the translators' well-known prefix (RFC 6052): a stateless translator in
 * front of an IPv6-only gateway (SIIT-DC, RFC 7755) gives each IPv4 client as 64:ff9b::a.b.c.d.
 */
const IPV4_TRANSLATED = [0x64, 0xff9b, 0, 0, 0, 0] as const;

/**
 * The client an address counts for: an IPv6 client by its /64 (a host is given a whole /64
 * and can send from any address in it), an IPv4 one by its address, also when a translator
 * gives it as 64:ff9b::a.b.c.d (as one /64, every IPv4 client behind the translator would be
 * one client, decision 454). The address is read in its canonical form first
 * (src/http/client-address.ts: an IPv4 address mapped into IPv6 is IPv4 there, decision 472),
 * so any text form of it counts alike (decision 444).
 */
export function throttledClient(address: string): string {
  const client = canonicalAddress(address);
  if (isIP(client) !== 6) return client;
  const groups = ipv6Groups(client);
  return (
    embeddedIpv4(groups, IPV4_TRANSLATED) ??
    `${groups
      .slice(0, 4)
      .map((group) => group.toString(16).padStart(4, '0'))
      .join(':')}::/64`
  );
}

/**
 * The mailbox an address reaches, for counting what is mailed to it: most mail systems deliver
 * `name+tag@host` to `name@host` (subaddressing, RFC 5233), so a tag is not a mailbox of its
 * own — one count per tag would let sign-ups to `victim+1@…`, `victim+2@…` flood one inbox
 * (decision 460). Gmail also ignores the dots of a name and answers to both its domains:
 * `v.ictim@googlemail.com` is `victim@gmail.com` (decision 490). Only the count: the account's
 * address stays as typed.
 */
export function mailboxOf(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return email;
  const plus = email.indexOf('+');
  const name = plus > 0 && plus < at ? email.slice(0, plus) : email.slice(0, at);
  const host = email.slice(at + 1).toLowerCase();
  if (!GMAIL_HOSTS.has(host)) return `${name}@${email.slice(at + 1)}`;
  const undotted = name.replaceAll('.', '');
  return undotted === '' ? email : `${undotted.toLowerCase()}@gmail.com`;
}

/** The domains of Gmail's mailboxes, which ignore a name's dots (and its case). */
const GMAIL_HOSTS = new Set(['gmail.com', 'googlemail.com']);

export class LoginThrottle {
  private readonly limits: ThrottleLimits;

  /** `limits`: the defaults but those given. */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    limits: Partial<ThrottleLimits> = {},
  ) {
    this.limits = { ...DEFAULT_THROTTLE_LIMITS, ...limits };
  }

  /**
   * Counts a sign-in attempt against the account and the address before its password is
   * checked: the milliseconds until sign-in may be tried again when this attempt is past a
   * limit, else 0. Counted first (as a failure), so a burst of guesses sent at once cannot
   * all be checked before the first failure is recorded; a success takes its count back
   * (recordSuccess). Refused: this client's sixth failure at the account in the window, any
   * client's past the account's ceiling but a client's first there, and an address's past
   * its own limit.
   */
  async attempt(email: string, address: string): Promise<number> {
    const client = throttledClient(address);
    // One transaction per key: the two need not share a Redis Cluster slot.
    const [account, byAddress] = await Promise.all([
      this.countInWindow(this.accountKey(email), [ALL_CLIENTS, client]),
      this.countAttempt(this.keys.loginFailures('address', client)),
    ]);
    const [all = 0, fromClient = 0] = account.counts;
    let waitMs = 0;
    const pastCeiling = all > this.limits.perAccount && fromClient > 1;
    if (fromClient > this.limits.perAccountClient || pastCeiling) {
      waitMs = Math.max(waitMs, account.ttlMs);
    }
    if (byAddress.count > this.limits.perAddress) waitMs = Math.max(waitMs, byAddress.ttlMs);
    return waitMs > 0 ? Math.max(1, waitMs) : 0;
  }

  /**
   * A successful sign-in forgets this client's failures at the account, and takes its attempt
   * back from the account's total and from the address's (a success is not a failure: an
   * office behind one address signs in all day). Other clients' failures stay counted: the
   * owner signing in does not give a guesser elsewhere its guesses back.
   */
  async recordSuccess(email: string, address: string): Promise<void> {
    const client = throttledClient(address);
    const accountKey = this.accountKey(email);
    const addressKey = this.keys.loginFailures('address', client);
    // Should the window have ended meanwhile, the -1 these leave expires like any count.
    await Promise.all([
      this.redis
        .multi()
        .hdel(accountKey, client)
        .hincrby(accountKey, ALL_CLIENTS, -1)
        .pexpire(accountKey, this.limits.windowMs, 'NX')
        .exec(),
      this.redis.multi().decr(addressKey).pexpire(addressKey, this.limits.windowMs, 'NX').exec(),
    ]);
  }

  /**
   * Counts a sign-up attempt from `address` (each one costs an scrypt and may make an account
   * and an organization): the milliseconds until it may be tried again when this attempt is
   * past the limit, else 0. Counted before the attempt, so a burst cannot outrun the count.
   */
  async signupAttempt(address: string): Promise<number> {
    const key = this.keys.signupAttempts(throttledClient(address));
    const { count, ttlMs } = await this.countAttempt(key);
    return count > this.limits.signupsPerAddress ? Math.max(1, ttlMs) : 0;
  }

  /**
   * Counts a request from `address` that may send e-mail to `email` (a sign-up while gw sends
   * mail, a resent verification, a password-reset request), whether or not the address has an
   * account, so the answer past a limit says nothing about it. The wait when past a limit,
   * else 0. A client past its own share for the address waits without counting against the
   * address's ceiling, so one client cannot use the ceiling up and leave the owner, asking from
   * elsewhere, without a link; the ceiling bounds the mailbox whoever asks (decision 450).
   */
  async emailAttempt(email: string, address: string): Promise<number> {
    const key = this.keys.emailAttempts('recipient-clients', sha256Hex(mailboxOf(email)));
    const client = throttledClient(address);
    const ownWaitMs = this.past(
      await this.countAttempt(key, client),
      this.limits.emailsPerRecipientClient,
    );
    if (ownWaitMs > 0) return ownWaitMs;
    return this.past(await this.countAttempt(key, ALL_CLIENTS), this.limits.emailsPerRecipient);
  }

  /** Counts a password-reset request from `address`: the wait when past the limit, else 0. */
  async resetRequestAttempt(address: string): Promise<number> {
    const key = this.keys.emailAttempts('reset-request', throttledClient(address));
    return this.past(await this.countAttempt(key), this.limits.resetRequestsPerAddress);
  }

  /**
   * Counts a use of an e-mailed link (a password reset, an address verification) from
   * `address`, before its token is looked up: the wait when past the limit, else 0.
   */
  async linkAttempt(address: string): Promise<number> {
    const key = this.keys.emailAttempts('link-use', throttledClient(address));
    return this.past(await this.countAttempt(key), this.limits.linkUsesPerAddress);
  }

  /** Clears the account's failed sign-ins (its password was just reset by e-mail). */
  async clearAccount(email: string): Promise<void> {
    await this.redis.del(this.accountKey(email));
  }

  private past(attempt: { count: number; ttlMs: number }, limit: number): number {
    return attempt.count > limit ? Math.max(1, attempt.ttlMs) : 0;
  }

  /** One more at `key` (a counter), or at the field `field` of the hash `key`. */
  private async countAttempt(
    key: string,
    field?: string,
  ): Promise<{ count: number; ttlMs: number }> {
    const { counts, ttlMs } = await this.countInWindow(key, field === undefined ? [] : [field]);
    return { count: counts[0] ?? 0, ttlMs };
  }

  /**
   * Counts one more at `key` — a counter, or each of `fields` of a hash — in the window its
   * first count starts, in one transaction: the counts after it, and the window's time left.
   */
  private async countInWindow(
    key: string,
    fields: readonly string[],
  ): Promise<{ counts: number[]; ttlMs: number }> {
    const transaction = this.redis.multi();
    if (fields.length === 0) transaction.incr(key);
    for (const field of fields) transaction.hincrby(key, field, 1);
    const results = await transaction.pexpire(key, this.limits.windowMs, 'NX').pttl(key).exec();
    const value = (index: number): number => Number(results?.[index]?.[1] ?? 0);
    const counted = Math.max(1, fields.length);
    return {
      counts: Array.from({ length: counted }, (_, index) => value(index)),
      ttlMs: value(counted + 1),
    };
  }

  /** One hash per account: every client's failures there and their total, one window. */
  private accountKey(email: string): string {
    return this.keys.loginFailures('account-clients', sha256Hex(email));
  }
}
