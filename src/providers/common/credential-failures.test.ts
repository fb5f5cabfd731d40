import { describe, expect, it } from 'vitest';
import { credentialCooldownMs } from './credential-failures.js';

describe('credentialCooldownMs (when a BYOK credential is set aside, and for how long)', () => {
  it.each([
    ['429 rate limit', 429, '{}', undefined, 10_000],
    ['429 rate limit with retry-after seconds', 429, '{}', '3', 3_000],
    ['429 insufficient_quota', 429, '{"error":{"code":"insufficient_quota"}}', undefined, 300_000],
    ['402 billing', 402, '{}', undefined, 300_000],
    ['529 overloaded', 529, '{}', undefined, 5_000],
    ['503 unavailable', 503, '{}', '1', 1_000],
    ['401 rejected key (retry-after ignored)', 401, '{}', '1', 600_000],
    ['403 forbidden key', 403, '{}', undefined, 600_000],
  ])('%s', (_name, status, body, retryAfter, expected) => {
    expect(credentialCooldownMs(status, body, retryAfter)).toBe(expected);
  });

  it.each([400, 404, 413, 422, 500, 502])('%i is not the key’s fault: no failover', (status) => {
    expect(credentialCooldownMs(status, '{}', '5')).toBeUndefined();
  });

  it('caps a retry-after at an hour and reads an HTTP date', () => {
    expect(credentialCooldownMs(429, '{}', '999999')).toBe(3_600_000);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const ms = credentialCooldownMs(429, '{}', inTenSeconds)!;
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(10_000);
  });

  it('falls back to the default for an unreadable retry-after', () => {
    expect(credentialCooldownMs(429, '{}', 'soon')).toBe(10_000);
  });
});
