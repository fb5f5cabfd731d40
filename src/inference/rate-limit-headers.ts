// The rate-limit headers of every answer to a request made with a rate-limited key
// (docs/decisions.md 353), in the names and forms its protocol's clients read: OpenAI's
// `x-ratelimit-*-requests` on chat completions, Anthropic's `anthropic-ratelimit-requests-*`
// on messages. They describe the gw key's bucket, never the vendor account's (whose headers
// gw does not relay).
import type { RateLimitState } from '../billing/budget-store.js';

/** The headers telling a client where it stands against its rate limit. */
export type RateLimitHeaders = (state: RateLimitState) => Record<string, string>;

/** OpenAI's: the reset as a duration (`120ms`, `1s`, `6m0s`). */
export const chatCompletionsRateLimitHeaders: RateLimitHeaders = (state) => ({
  'x-ratelimit-limit-requests': String(state.limitPerMinute),
  'x-ratelimit-remaining-requests': String(state.remaining),
  'x-ratelimit-reset-requests': durationText(state.resetMs),
});

/** Anthropic's: the reset as an RFC 3339 time in whole seconds, rounded up, as it writes it. */
export const messagesRateLimitHeaders: RateLimitHeaders = (state) => ({
  'anthropic-ratelimit-requests-limit': String(state.limitPerMinute),
  'anthropic-ratelimit-requests-remaining': String(state.remaining),
  'anthropic-ratelimit-requests-reset': wholeSecondTime(state.atMs + state.resetMs),
});

/**
 * Whole ms as Go's `time.Duration` writes them, the form of OpenAI's resets: `0s`, `120ms`,
 * `1s`, `1.5s`, `6m0s`, `1h0m0s`.
 */
export function durationText(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const secondsMs = ms % 60_000;
  const fractionMs = secondsMs % 1000;
  const fraction =
    fractionMs === 0 ? '' : `.${String(fractionMs).padStart(3, '0').replace(/0+$/, '')}`;
  const seconds = `${Math.floor(secondsMs / 1000)}${fraction}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}

/** `2026-01-02T03:04:05Z`: the first whole second at or after `ms` (UTC). */
function wholeSecondTime(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
