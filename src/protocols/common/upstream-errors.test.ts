import { describe, expect, it } from 'vitest';
import { upstreamError } from './upstream-errors.js';

describe('upstreamError (vendor error answers as the client sees them)', () => {
  it('keeps a short vendor message for a 4xx the client can act on, secrets redacted', () => {
    const error = upstreamError(
      'vendor_b',
      400,
      '{"error":{"message":"Invalid key sk-proj-abcdefghijklmnop0123 in field messages"}}',
      undefined,
    );
    expect(error.code).toBe('gw_invalid_request');
    expect(error.message).toContain('vendor_b rejected the request (400)');
    expect(error.message).toContain('[redacted]');
    expect(error.message).not.toContain('sk-proj');
  });

  it('bounds the vendor message', () => {
    const long = 'x '.repeat(2000);
    const error = upstreamError(
      'vendor_a',
      422,
      JSON.stringify({ error: { message: long } }),
      undefined,
    );
    expect(error.message.length).toBeLessThan(400);
  });

  it('never forwards the body of a 5xx or an auth failure', () => {
    for (const status of [401, 403, 500, 503]) {
      const error = upstreamError(
        'vendor_a',
        status,
        '{"error":{"message":"internal trace: password=hunter2"}}',
        undefined,
      );
      expect(error.code).toBe('gw_upstream_error');
      expect(error.message).toBe(
        status === 401 || status === 403
          ? `vendor_a answered ${status}: it refused the vendor key gw sent (the gateway operator's, or your organization's provider credential); a retry will not help until that key is mended`
          : `vendor_a answered ${status}`,
      );
      expect(error.message).not.toContain('hunter2');
    }
  });

  it("tells clients not to retry a refusal of the gateway's own vendor key, and retry a 5xx", () => {
    for (const status of [401, 403]) {
      expect(upstreamError('vendor_a', status, '', undefined).headers).toEqual({
        'x-should-retry': 'false',
      });
    }
    for (const status of [500, 502, 503]) {
      expect(upstreamError('vendor_a', status, '', undefined).headers).toBeUndefined();
    }
  });

  it('passes retry-after through on a rate limit, without the body', () => {
    const error = upstreamError('vendor_b', 429, '{"error":{"message":"org org-123"}}', '4');
    expect(error.code).toBe('gw_upstream_rate_limited');
    expect(error.headers).toEqual({ 'retry-after': '4' });
    expect(error.message).not.toContain('org-123');
  });

  it('ignores a body that is not JSON', () => {
    const error = upstreamError(
      'vendor_b',
      400,
      '<html>sk-live-0123456789abcdefghij</html>',
      undefined,
    );
    expect(error.message).toBe('vendor_b rejected the request (400)');
  });
});
