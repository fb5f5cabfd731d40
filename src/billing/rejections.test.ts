import { describe, expect, it } from 'vitest';
import { rateLimitedError } from './rejections.js';

describe('a rate-limit refusal', () => {
  const refusal = (scope: 'key' | 'product_user', limitPerMinute: number, retryAfterMs: number) =>
    ({
      kind: 'rate_limited',
      scope,
      limitPerMinute,
      retryAfterMs,
      rateLimit: { limitPerMinute, remaining: 0, resetMs: 60_000, atMs: 0 },
    }) as const;

  it('names what the caller holds, the limit and the wait', () => {
    const byKey = rateLimitedError(refusal('key', 60, 1_500));
    expect([byKey.status, byKey.code, byKey.message]).toEqual([
      429,
      'gw_rate_limited',
      "this API key's limit of 60 requests per minute is reached; retry in 2 s",
    ]);
    expect(byKey.headers).toEqual({ 'retry-after': '2', 'retry-after-ms': '1500' });
    expect(rateLimitedError(refusal('product_user', 1, 20), 'api_key').message).toBe(
      "this product user's limit of 1 request per minute under this key is reached; retry in 1 s",
    );
    expect(rateLimitedError(refusal('key', 5, 999), 'oauth_token').message).toBe(
      "this connected app's limit of 5 requests per minute is reached; retry in 1 s",
    );
    expect(rateLimitedError(refusal('product_user', 2, 0), 'oauth_token')).toMatchObject({
      message:
        "this product user's limit of 2 requests per minute through this app is reached; retry in 1 s",
      headers: { 'retry-after': '1', 'retry-after-ms': '1' },
    });
  });

  it('carries the headers it is given on where the key stands, besides the waits', () => {
    const headers = { 'x-ratelimit-remaining-requests': '0' };
    expect(rateLimitedError(refusal('key', 60, 1_500), 'api_key', headers).headers).toEqual({
      'x-ratelimit-remaining-requests': '0',
      'retry-after': '2',
      'retry-after-ms': '1500',
    });
  });
});
