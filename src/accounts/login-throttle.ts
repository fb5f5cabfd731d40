// Failed sign-ins are counted per account and per client address in Redis (shared by every
// instance); past the limit a sign-in is refused without checking the password until the
// window ends (429 gw_too_many_attempts with Retry-After). Self-service sign-ups are counted
// per client address the same way, every attempt.
import { gwError, type GwError } from '../errors.js';
import type { RedisClient } from '../redis/connect.js';
import { sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';

export interface ThrottleLimits {
  readonly perAccount: number;
  readonly perAddress: number;
  /** Self-service sign-ups (every attempt, successful or not) per client address. */
  readonly signupsPerAddress: number;
  readonly windowMs: number;
}

export const DEFAULT_THROTTLE_LIMITS: ThrottleLimits = {
  perAccount: 5,
  perAddress: 50,
  signupsPerAddress: 10,
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

export class LoginThrottle {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly limits: ThrottleLimits = DEFAULT_THROTTLE_LIMITS,
  ) {}

  /** Milliseconds until sign-in may be tried again, or 0 when it may be tried now. */
  async blockedForMs(email: string, address: string): Promise<number> {
    const [accountKey, addressKey] = this.keysFor(email, address);
    // One read per key: the two need not share a Redis Cluster slot.
    const [account, byAddress] = await Promise.all([
      this.countAndTtl(accountKey),
      this.countAndTtl(addressKey),
    ]);
    let waitMs = 0;
    if (account.count >= this.limits.perAccount) waitMs = Math.max(waitMs, account.ttlMs);
    if (byAddress.count >= this.limits.perAddress) waitMs = Math.max(waitMs, byAddress.ttlMs);
    return Math.max(0, waitMs);
  }

  async recordFailure(email: string, address: string): Promise<void> {
    await Promise.all(
      this.keysFor(email, address).map((key) =>
        this.redis.multi().incr(key).pexpire(key, this.limits.windowMs, 'NX').exec(),
      ),
    );
  }

  /** A successful sign-in clears the account's count (not the address's). */
  async recordSuccess(email: string): Promise<void> {
    await this.redis.del(this.keys.loginFailures('account', sha256Hex(email)));
  }

  /**
   * Counts a sign-up attempt from `address` (each one costs an scrypt and may make an account
   * and an organization): the milliseconds until it may be tried again when this attempt is
   * past the limit, else 0. Counted before the attempt, so a burst cannot outrun the count.
   */
  async signupAttempt(address: string): Promise<number> {
    const key = this.keys.signupAttempts(address);
    const results = await this.redis
      .multi()
      .incr(key)
      .pexpire(key, this.limits.windowMs, 'NX')
      .pttl(key)
      .exec();
    const count = Number(results?.[0]?.[1] ?? 0);
    const ttlMs = Number(results?.[2]?.[1] ?? 0);
    return count > this.limits.signupsPerAddress ? Math.max(1, ttlMs) : 0;
  }

  private async countAndTtl(key: string): Promise<{ count: number; ttlMs: number }> {
    const results = await this.redis.multi().get(key).pttl(key).exec();
    const value = (index: number): number => Number(results?.[index]?.[1] ?? 0);
    return { count: value(0), ttlMs: value(1) };
  }

  private keysFor(email: string, address: string): [string, string] {
    return [
      this.keys.loginFailures('account', sha256Hex(email)),
      this.keys.loginFailures('address', address),
    ];
  }
}
