import { describe, expect, it } from 'vitest';
import { chargeFor, type Charge, type RequestEnd } from './charging-policy.js';
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
    charge('client_aborted', 'client_aborted_before_answer', null, {
      inputTokens: 100,
      webSearchRequests: 3,
    }),
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
    { kind: 'answer_broken', upstreamStatus: 200, cause: 'invalid_json', usage: {} },
    charge('incomplete', 'vendor_invalid_json', 200, { inputTokens: 100, webSearchRequests: 3 }),
  ],
  [
    'JSON body cut short',
    { kind: 'answer_broken', upstreamStatus: 200, cause: 'truncated', usage: {} },
    charge('incomplete', 'truncated', 200, { inputTokens: 100, webSearchRequests: 3 }),
  ],
  [
    'client aborted mid-stream, vendor_a named its input',
    {
      kind: 'answer_broken',
      upstreamStatus: 200,
      cause: 'client_aborted',
      usage: { reportedPrompt, countedOutputTokens: 12 },
    },
    charge('client_aborted', 'client_aborted_during_answer', 200, {
      inputTokens: 95,
      cacheReadTokens: 50,
      outputTokens: 12,
      webSearchRequests: 3,
    }),
  ],
  [
    'truncated stream',
    {
      kind: 'answer_broken',
      upstreamStatus: 200,
      cause: 'truncated',
      usage: { countedOutputTokens: 7 },
    },
    charge('incomplete', 'truncated', 200, {
      inputTokens: 100,
      outputTokens: 7,
      webSearchRequests: 3,
    }),
  ],
  [
    'stream timed out mid-way',
    {
      kind: 'answer_broken',
      upstreamStatus: 200,
      cause: 'timeout',
      usage: { countedOutputTokens: 3 },
    },
    charge('incomplete', 'upstream_timeout', 200, {
      inputTokens: 100,
      outputTokens: 3,
      webSearchRequests: 3,
    }),
  ],
  [
    'stream cut at the end of the shutdown grace: what was relayed',
    {
      kind: 'answer_broken',
      upstreamStatus: 200,
      cause: 'shutdown',
      usage: { reportedPrompt, countedOutputTokens: 12 },
    },
    charge('incomplete', 'gateway_shutdown', 200, {
      inputTokens: 95,
      cacheReadTokens: 50,
      outputTokens: 12,
      webSearchRequests: 3,
    }),
  ],
  [
    'JSON body cut at the end of the shutdown grace',
    { kind: 'answer_broken', upstreamStatus: 200, cause: 'shutdown', usage: {} },
    charge('incomplete', 'gateway_shutdown', 200, { inputTokens: 100, webSearchRequests: 3 }),
  ],
  [
    'vendor error event inside a stream, after usage',
    {
      kind: 'answer_broken',
      upstreamStatus: 200,
      cause: 'vendor_error_event',
      usage: { reported },
    },
    charge('incomplete', 'vendor_error_event', 200, reported),
  ],
  [
    'completed with reported usage',
    { kind: 'completed', upstreamStatus: 200, stream: false, usage: { reported } },
    charge('completed', 'completed', 200, reported),
  ],
  [
    'completed JSON without usage: the whole held output',
    { kind: 'completed', upstreamStatus: 200, stream: false, usage: {} },
    charge('completed', 'completed_without_usage', 200, {
      inputTokens: 100,
      outputTokens: 3000,
      webSearchRequests: 3,
    }),
  ],
  [
    'completed stream without usage: the counted text',
    {
      kind: 'completed',
      upstreamStatus: 200,
      stream: true,
      usage: { countedOutputTokens: 22 },
    },
    charge('completed', 'completed_without_usage', 200, {
      inputTokens: 100,
      outputTokens: 22,
      webSearchRequests: 3,
    }),
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
    expect(
      chargeFor({ kind: 'completed', upstreamStatus: 200, stream: false, usage: {} }, heldAsWrite),
    ).toMatchObject(written);
    expect(
      chargeFor(
        { kind: 'completed', upstreamStatus: 200, stream: false, usage: { reported } },
        heldAsWrite,
      ),
    ).toMatchObject({ inputTokens: 90, cacheWriteTokens: 20, cacheWrite1hTokens: 5 });
  });

  it('charges a stream cut short the searches it relayed, not every one held', () => {
    // The vendor began one search (a server_tool_use block) before the stream broke: the other
    // two it was allowed never ran, as the output it never produced is not charged.
    for (const cause of ['truncated', 'vendor_error_event', 'client_aborted'] as const) {
      expect(
        chargeFor(
          {
            kind: 'answer_broken',
            upstreamStatus: 200,
            cause,
            usage: { reportedPrompt, countedOutputTokens: 7, countedWebSearches: 1 },
          },
          context,
        ).webSearchRequests,
      ).toBe(1);
    }
    expect(
      chargeFor(
        {
          kind: 'completed',
          upstreamStatus: 200,
          stream: true,
          usage: { countedOutputTokens: 7, countedWebSearches: 0 },
        },
        context,
      ).webSearchRequests,
    ).toBe(0);
    // A report wins over the count.
    expect(
      chargeFor(
        {
          kind: 'answer_broken',
          upstreamStatus: 200,
          cause: 'truncated',
          usage: { reported, countedWebSearches: 1 },
        },
        context,
      ).webSearchRequests,
    ).toBe(2);
  });

  it('charges nothing for any ending where the vendor was not called or refused', () => {
    for (const [, end] of table) {
      if (end.kind !== 'not_dispatched' && end.kind !== 'vendor_refused') continue;
      const charge = chargeFor(end, context);
      expect(charge.inputTokens + charge.outputTokens).toBe(0);
    }
  });
});
