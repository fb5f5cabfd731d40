// The rate-limit headers in the forms the vendors write them (decision 353): OpenAI's reset as a
// Go duration, Anthropic's as an RFC 3339 time in whole seconds.
import { describe, expect, it } from 'vitest';
import {
  chatCompletionsRateLimitHeaders,
  durationText,
  messagesRateLimitHeaders,
} from './rate-limit-headers.js';

describe('durationText', () => {
  it('writes whole ms as Go writes a duration', () => {
    const written = [0, 1, 120, 999, 1000, 1500, 12_000, 8572, 59_999, 60_000, 360_000, 3_600_000];
    expect(written.map(durationText)).toEqual([
      '0s',
      '1ms',
      '120ms',
      '999ms',
      '1s',
      '1.5s',
      '12s',
      '8.572s',
      '59.999s',
      '1m0s',
      '6m0s',
      '1h0m0s',
    ]);
  });
});

describe('the headers of each protocol', () => {
  const state = {
    limitPerMinute: 5,
    remaining: 4,
    resetMs: 12_000,
    atMs: Date.UTC(2026, 0, 2, 3, 4, 5, 1),
  };

  it("chat completions: OpenAI's names, the reset as a duration", () => {
    expect(chatCompletionsRateLimitHeaders(state)).toEqual({
      'x-ratelimit-limit-requests': '5',
      'x-ratelimit-remaining-requests': '4',
      'x-ratelimit-reset-requests': '12s',
    });
  });

  it("messages: Anthropic's names, the reset as the next whole second (UTC)", () => {
    expect(messagesRateLimitHeaders(state)).toEqual({
      'anthropic-ratelimit-requests-limit': '5',
      'anthropic-ratelimit-requests-remaining': '4',
      'anthropic-ratelimit-requests-reset': '2026-01-02T03:04:18Z',
    });
    const onTheSecond = { ...state, atMs: Date.UTC(2026, 0, 2, 3, 4, 5, 0) };
    expect(messagesRateLimitHeaders(onTheSecond)['anthropic-ratelimit-requests-reset']).toBe(
      '2026-01-02T03:04:17Z',
    );
  });
});
