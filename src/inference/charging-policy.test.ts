import { describe, expect, it } from 'vitest';
import { chargeFor, type Charge, type ObservedUsage, type RequestEnd } from './charging-policy.js';
import type { TokenUsage } from '../protocols/common/usage.js';

const estimatedPrompt = {
  inputTokens: 100,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
};
// The body allowed 3 web searches; the vendor reported 2.
const context = { estimatedPrompt, heldOutputTokens: 3000, heldWebSearches: 3 };
// The prompt's cache parts travel with the tokens they belong to.
const reported = {
  inputTokens: 90,
  cacheWriteTokens: 20,
  cacheWrite1hTokens: 5,
  cacheReadTokens: 30,
  outputTokens: 40,
  webSearchRequests: 2,
};
const reportedPrompt = {
  inputTokens: 95,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 50,
};

const NO_TOKENS: TokenUsage = {
  inputTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  outputTokens: 0,
  webSearchRequests: 0,
};
/** An expected charge: the token counts named, every other count 0. */
const charge = (
  status: Charge['status'],
  reason: Charge['reason'],
  upstreamStatus: number | null,
  tokens: Partial<TokenUsage> = {},
): Charge => ({ status, reason, upstreamStatus, ...NO_TOKENS, ...tokens });

/** An answer that broke off after the vendor's 200, and the usage seen before it did. */
const broken = (cause: BrokenCause, usage: ObservedUsage = {}): RequestEnd => ({
  kind: 'answer_broken',
  upstreamStatus: 200,
  cause,
  usage,
});
type BrokenCause = Extract<RequestEnd, { kind: 'answer_broken' }>['cause'];
const completed = (stream: boolean, usage: ObservedUsage): RequestEnd => ({
  kind: 'completed',
  upstreamStatus: 200,
  stream,
  usage,
});
/** The prompt as admission estimated it (no cache part) and every web search held. */
const ESTIMATE = { inputTokens: 100, webSearchRequests: 3 };
/** The prompt vendor_a named in message_start, and every web search held. */
const NAMED_PROMPT = { inputTokens: 95, cacheReadTokens: 50, webSearchRequests: 3 };

// The table of docs/charging.md, row by row: how a request ended → what it is charged.
const table: Array<[string, RequestEnd, Charge]> = [
  [
    'client gone before dispatch',
    { kind: 'not_dispatched', cause: 'client_gone' },
    charge('client_aborted', 'client_gone_before_dispatch', null),
  ],
  [
    'the call could not be built or a gateway bug before dispatch',
    { kind: 'not_dispatched', cause: 'gateway_error' },
    charge('incomplete', 'gateway_error', null),
  ],
  [
    'the instance serving it died before it settled (another settles its draft)',
    { kind: 'instance_lost' },
    charge('incomplete', 'gateway_lost', null),
  ],
  [
    'client aborted after dispatch, before the answer',
    { kind: 'no_answer', cause: 'client_aborted' },
    charge('client_aborted', 'client_aborted_before_answer', null, ESTIMATE),
  ],
  [
    'network error before the answer',
    { kind: 'no_answer', cause: 'network_error' },
    charge('upstream_error', 'network_error', null),
  ],
  [
    'timeout before the answer',
    { kind: 'no_answer', cause: 'timeout' },
    charge('upstream_error', 'upstream_timeout', null),
  ],
  [
    'cut at the end of the shutdown grace before the answer',
    { kind: 'no_answer', cause: 'shutdown' },
    charge('incomplete', 'gateway_shutdown', null),
  ],
  [
    'vendor error status',
    { kind: 'vendor_refused', upstreamStatus: 500, failoverExhausted: false },
    charge('upstream_error', 'vendor_error_status', 500),
  ],
  [
    'BYOK failover ran out',
    { kind: 'vendor_refused', upstreamStatus: 429, failoverExhausted: true },
    charge('upstream_error', 'failover_exhausted', 429),
  ],
  [
    'invalid JSON from the vendor',
    broken('invalid_json'),
    charge('incomplete', 'vendor_invalid_json', 200, ESTIMATE),
  ],
  ['JSON body cut short', broken('truncated'), charge('incomplete', 'truncated', 200, ESTIMATE)],
  [
    'client aborted mid-stream, vendor_a named its input',
    broken('client_aborted', { reportedPrompt, countedOutputTokens: 12 }),
    charge('client_aborted', 'client_aborted_during_answer', 200, {
      outputTokens: 12,
      ...NAMED_PROMPT,
    }),
  ],
  [
    'truncated stream',
    broken('truncated', { countedOutputTokens: 7 }),
    charge('incomplete', 'truncated', 200, { outputTokens: 7, ...ESTIMATE }),
  ],
  [
    'stream timed out mid-way',
    broken('timeout', { countedOutputTokens: 3 }),
    charge('incomplete', 'upstream_timeout', 200, { outputTokens: 3, ...ESTIMATE }),
  ],
  [
    'stream cut at the end of the shutdown grace: what was relayed',
    broken('shutdown', { reportedPrompt, countedOutputTokens: 12 }),
    charge('incomplete', 'gateway_shutdown', 200, { outputTokens: 12, ...NAMED_PROMPT }),
  ],
  [
    'JSON body cut at the end of the shutdown grace',
    broken('shutdown'),
    charge('incomplete', 'gateway_shutdown', 200, ESTIMATE),
  ],
  [
    'vendor error event inside a stream, after usage',
    broken('vendor_error_event', { reported }),
    charge('incomplete', 'vendor_error_event', 200, reported),
  ],
  [
    'completed with reported usage',
    completed(false, { reported }),
    charge('completed', 'completed', 200, reported),
  ],
  [
    'completed JSON without usage: the whole held output',
    completed(false, {}),
    charge('completed', 'completed_without_usage', 200, { outputTokens: 3000, ...ESTIMATE }),
  ],
  [
    'completed stream without usage: the counted text',
    completed(true, { countedOutputTokens: 22 }),
    charge('completed', 'completed_without_usage', 200, { outputTokens: 22, ...ESTIMATE }),
  ],
];

describe('chargeFor', () => {
  it.each(table)('%s', (_name, end, expected) => {
    expect(chargeFor(end, context)).toEqual(expected);
  });

  it('never charges more output than was held when the vendor reports nothing', () => {
    for (const [, end] of table) {
      expect(chargeFor(end, context).outputTokens).toBeLessThanOrEqual(
        Math.max(context.heldOutputTokens, reported.outputTokens),
      );
    }
  });

  it('charges an estimated prompt as the part the hold priced it at, a reported one as reported', () => {
    // A body that asked for a cache write, held at its rate: without a report, the vendor may
    // have written the whole prompt to its cache.
    const written = { ...estimatedPrompt, cacheWriteTokens: 100, cacheWrite1hTokens: 100 };
    const heldAsWrite = { estimatedPrompt: written, heldOutputTokens: 3000, heldWebSearches: 0 };
    expect(chargeFor({ kind: 'no_answer', cause: 'client_aborted' }, heldAsWrite)).toMatchObject(
      written,
    );
    expect(chargeFor(completed(false, {}), heldAsWrite)).toMatchObject(written);
    expect(chargeFor(completed(false, { reported }), heldAsWrite)).toMatchObject({
      inputTokens: 90,
      cacheWriteTokens: 20,
      cacheWrite1hTokens: 5,
    });
  });

  it('charges a stream cut short the searches it relayed, not every one held', () => {
    // The vendor began one search (a server_tool_use block) before the stream broke: the other
    // two it was allowed never ran, as the output it never produced is not charged.
    for (const cause of ['truncated', 'vendor_error_event', 'client_aborted'] as const) {
      const usage = { reportedPrompt, countedOutputTokens: 7, countedWebSearches: 1 };
      expect(chargeFor(broken(cause, usage), context).webSearchRequests).toBe(1);
    }
    const counted = { countedOutputTokens: 7, countedWebSearches: 0 };
    expect(chargeFor(completed(true, counted), context).webSearchRequests).toBe(0);
    // A report wins over the count.
    const bothNamed = { reported, countedWebSearches: 1 };
    expect(chargeFor(broken('truncated', bothNamed), context).webSearchRequests).toBe(2);
  });

  it('charges nothing for any ending where the vendor was not called or refused', () => {
    for (const [, end] of table) {
      if (end.kind !== 'not_dispatched' && end.kind !== 'vendor_refused') continue;
      const charge = chargeFor(end, context);
      expect(charge.inputTokens + charge.outputTokens).toBe(0);
    }
  });
});
