import { describe, expect, it } from 'vitest';
import { MessagesToChatStreamRelay } from '../chat-over-messages/messages-to-chat.js';
import { MessagesStreamUsage, readMessagesUnpricedTiers, readMessagesUsage } from './usage.js';
import { promptCacheWrite, serverToolCosts } from './request.js';
import { MessagesStreamRelay } from './stream-relay.js';

describe('messages usage', () => {
  it('counts every prompt part as input and keeps the cache parts apart', () => {
    const usage = readMessagesUsage({
      usage: {
        input_tokens: 3,
        cache_creation_input_tokens: 500,
        cache_read_input_tokens: 40,
        output_tokens: 7,
      },
    });
    expect(usage).toEqual({
      inputTokens: 543,
      cacheWriteTokens: 500,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 40,
      outputTokens: 7,
      webSearchRequests: 0,
    });
  });

  it('keeps the one-hour part of the cache writes apart, the writes never below their split', () => {
    const usage = (hour: unknown, total: unknown = 300) =>
      readMessagesUsage({
        usage: {
          input_tokens: 1,
          cache_creation_input_tokens: total,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: hour },
          output_tokens: 1,
        },
      });
    const writes = (hour: unknown, total?: unknown) => {
      const read = usage(hour, total);
      return read && [read.cacheWriteTokens, read.cacheWrite1hTokens, read.inputTokens];
    };
    expect(writes(200)).toEqual([300, 200, 301]);
    expect(writes(null)).toEqual([300, 0, 301]);
    // The vendor bills its split: a total below it (or none) is read as the split's sum.
    expect(writes(900)).toEqual([1000, 900, 1001]);
    expect(writes(2000, null)).toEqual([2100, 2000, 2101]);
    // Unreadable: the whole usage object is (decision 328).
    expect(usage(-1)).toBeUndefined();
    expect(usage('200')).toBeUndefined();
  });

  it('reads a count the ledger could not hold as malformed', () => {
    const usage = (fields: Record<string, unknown>) =>
      readMessagesUsage({ usage: { input_tokens: 3, output_tokens: 1, ...fields } });
    expect(usage({ cache_creation_input_tokens: 2_147_483_647 })).toBeUndefined();
    expect(usage({ input_tokens: 100_000_001 })).toBeUndefined();
    expect(usage({ input_tokens: 100_000_000 })).toMatchObject({ inputTokens: 100_000_000 });
  });

  it('reads the web searches the vendor made, in a whole message and over a stream', () => {
    expect(
      readMessagesUsage({
        usage: { input_tokens: 3, output_tokens: 1, server_tool_use: { web_search_requests: 4 } },
      })?.webSearchRequests,
    ).toBe(4);
    expect(
      readMessagesUsage({
        usage: { input_tokens: 3, output_tokens: 1, server_tool_use: { web_search_requests: -1 } },
      }),
    ).toBeUndefined();
    const tracker = new MessagesStreamUsage();
    tracker.observe({ type: 'message_start', message: { usage: { input_tokens: 2 } } });
    const delta = (usage: Record<string, unknown>) =>
      tracker.observe({ type: 'message_delta', usage: { output_tokens: 1, ...usage } });
    delta({ server_tool_use: { web_search_requests: 1 } });
    delta({ server_tool_use: { web_search_requests: 3 } });
    // Cumulative: a delta that does not name them leaves the count seen.
    delta({});
    expect(tracker.usage?.webSearchRequests).toBe(3);
  });

  it('counts the web searches a stream began, for a stream that ends without a report', () => {
    const tracker = new MessagesStreamUsage();
    tracker.observe({ type: 'message_start', message: { usage: { input_tokens: 2 } } });
    const block = (content_block: Record<string, unknown>) =>
      tracker.observe({ type: 'content_block_start', content_block });
    block({ type: 'text', text: '' });
    block({ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} });
    block({ type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] });
    block({ type: 'server_tool_use', id: 'srvtoolu_2', name: 'web_fetch', input: {} });
    block({ type: 'tool_use', id: 'toolu_1', name: 'web_search', input: {} });
    block({ type: 'server_tool_use', id: 'srvtoolu_3', name: 'web_search', input: {} });
    expect(tracker.usage).toBeUndefined();
    expect(tracker.searchesSeen).toBe(2);
  });

  it('reads cache parts and searches left out (or null) as none', () => {
    const usage = readMessagesUsage({
      usage: {
        input_tokens: 3,
        cache_creation_input_tokens: null,
        cache_creation: null,
        server_tool_use: {},
        output_tokens: 1,
      },
    });
    expect(usage).toEqual({
      inputTokens: 3,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 1,
      webSearchRequests: 0,
    });
  });

  // Read as none, each would under-bill: the request is charged as if nothing was reported.
  it.each([
    ['a negative cache read', { cache_read_input_tokens: -5 }],
    ['a cache write as text', { cache_creation_input_tokens: '9000' }],
    ['a fractional cache read', { cache_read_input_tokens: 1.5 }],
    ['one-hour writes as text', { cache_creation: { ephemeral_1h_input_tokens: '4000' } }],
    ['the cache split as a number', { cache_creation: 4000 }],
    ['searches as text', { server_tool_use: { web_search_requests: '3' } }],
    ['server tool use as a list', { server_tool_use: [3] }],
  ])('reads a usage object naming %s as malformed', (_name, part) => {
    const usage = { input_tokens: 3, output_tokens: 1, ...part };
    expect(readMessagesUsage({ usage })).toBeUndefined();
    const started = new MessagesStreamUsage();
    started.observe({ type: 'message_start', message: { usage } });
    started.observe({ type: 'message_delta', usage: { output_tokens: 1 } });
    expect(started.promptSeen).toBeUndefined();
    expect(started.usage).toBeUndefined();
    const ended = new MessagesStreamUsage();
    ended.observe({ type: 'message_start', message: { usage: { input_tokens: 3 } } });
    ended.observe({ type: 'message_delta', usage });
    expect(ended.usage).toBeUndefined();
  });

  it('in a stream, knows the prompt and its cache parts from message_start', () => {
    const tracker = new MessagesStreamUsage();
    tracker.observe({
      type: 'message_start',
      message: {
        usage: { input_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 90 },
      },
    });
    expect(tracker.promptSeen).toEqual({
      inputTokens: 92,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 90,
    });
    expect(tracker.usage).toBeUndefined();
    tracker.observe({ type: 'message_delta', usage: { output_tokens: 4 } });
    expect(tracker.usage).toEqual({
      inputTokens: 92,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 90,
      outputTokens: 4,
      webSearchRequests: 0,
    });
  });

  it('in a stream, keeps the one-hour part of the writes as the last well-formed count named', () => {
    const start = {
      type: 'message_start',
      message: {
        usage: {
          input_tokens: 1,
          cache_creation_input_tokens: 5000,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 4000 },
        },
      },
    };
    const oneHourAfter = (deltaUsage: Record<string, unknown>): number | undefined => {
      const tracker = new MessagesStreamUsage();
      tracker.observe(start);
      tracker.observe({ type: 'message_delta', usage: { output_tokens: 4, ...deltaUsage } });
      return tracker.usage?.cacheWrite1hTokens;
    };
    // message_delta's counts are cumulative: it may leave the split out, or name it again.
    expect(oneHourAfter({ cache_creation_input_tokens: 5000 })).toBe(4000);
    expect(
      oneHourAfter({
        cache_creation_input_tokens: 5000,
        cache_creation: { ephemeral_5m_input_tokens: 3000, ephemeral_1h_input_tokens: 2000 },
      }),
    ).toBe(2000);
    // A split that does not name the one-hour count (or names it null) leaves the count seen
    // before, as every other part of the prompt does.
    expect(oneHourAfter({ cache_creation: { ephemeral_5m_input_tokens: 1000 } })).toBe(4000);
    expect(oneHourAfter({ cache_creation: { ephemeral_1h_input_tokens: null } })).toBe(4000);
    expect(oneHourAfter({ cache_creation: null })).toBe(4000);
  });
});

describe('messages usage over a stream: each billed count is the last one named (decision 328)', () => {
  const started = (usage: Record<string, unknown>) => {
    const tracker = new MessagesStreamUsage();
    tracker.observe({ type: 'message_start', message: { usage } });
    return tracker;
  };

  // message_delta names input_tokens cumulatively (a web search adds the pages it read).
  it("leaves the stream unreported when a delta names its input unreadable, not message_start's", () => {
    const tracker = started({ input_tokens: 2679 });
    tracker.observe({
      type: 'message_delta',
      usage: {
        input_tokens: '10682',
        output_tokens: 510,
        server_tool_use: { web_search_requests: 1 },
      },
    });
    expect(tracker.usage).toBeUndefined();
    expect(tracker.promptSeen).toBeUndefined();
  });

  it('leaves it unreported when a later delta names the output unreadable', () => {
    const tracker = started({ input_tokens: 10 });
    tracker.observe({ type: 'message_delta', usage: { output_tokens: 5 } });
    tracker.observe({ type: 'message_delta', usage: { output_tokens: '5000' } });
    expect(tracker.usage).toBeUndefined();
  });

  it('takes a well-formed final count over an unreadable earlier one', () => {
    const tracker = started({
      input_tokens: 10,
      cache_read_input_tokens: '9000',
      output_tokens: 1,
    });
    expect(tracker.promptSeen).toBeUndefined();
    tracker.observe({
      type: 'message_delta',
      usage: { input_tokens: 10, cache_read_input_tokens: 9000, output_tokens: 5000 },
    });
    expect(tracker.usage).toEqual({
      inputTokens: 9010,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 9000,
      outputTokens: 5000,
      webSearchRequests: 0,
    });
  });

  it('reads the writes from their split when the total is not named', () => {
    const tracker = started({
      input_tokens: 1,
      cache_creation: { ephemeral_5m_input_tokens: 3000, ephemeral_1h_input_tokens: 2000 },
    });
    tracker.observe({ type: 'message_delta', usage: { output_tokens: 1 } });
    expect(tracker.usage).toMatchObject({
      inputTokens: 5001,
      cacheWriteTokens: 5000,
      cacheWrite1hTokens: 2000,
    });
  });
});

describe('the output a messages stream relayed', () => {
  const sse = (events: object[]): Uint8Array =>
    Buffer.from(events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join(''));

  // What a stream that ends without a usable report is charged for is counted from it.
  it('includes extended thinking, which the vendor bills as output', () => {
    const relay = new MessagesStreamRelay();
    const delta = (index: number, fields: Record<string, unknown>) => ({
      type: 'content_block_delta',
      index,
      delta: fields,
    });
    relay.push(
      sse([
        { type: 'message_start', message: { usage: { input_tokens: 10 } } },
        delta(0, { type: 'thinking_delta', thinking: 'first, ' }),
        delta(0, { type: 'signature_delta', signature: 'c2lnbmF0dXJl' }),
        delta(1, { type: 'text_delta', text: 'ok' }),
        delta(2, { type: 'input_json_delta', partial_json: '{"a":1}' }),
      ]),
    );
    expect(relay.producedText).toEqual(['first, ', 'ok', '{"a":1}']);
  });
});

describe('the tier vendor_a says it served at (decision 342)', () => {
  const sse = (events: object[]): Uint8Array =>
    Buffer.from(events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join(''));
  const standard = { service_tier: 'standard', inference_geo: 'not_available', speed: 'standard' };
  /** What each relay of a messages stream (passed on as is, or as chat completions) reports. */
  const streamedTiers = (events: object[]) =>
    [new MessagesStreamRelay(), new MessagesToChatStreamRelay('vendor_a', false)].map((relay) => {
      relay.push(sse(events));
      return relay.unpricedTiers;
    });

  it('names what a JSON answer reports beyond the standard tier, speed and geography', () => {
    const tiers = (usage: Record<string, unknown>) =>
      readMessagesUnpricedTiers({ usage: { input_tokens: 1, output_tokens: 1, ...usage } });
    expect(tiers(standard)).toBeUndefined();
    expect(tiers({ inference_geo: 'global' })).toBeUndefined();
    expect(tiers({})).toBeUndefined();
    expect(readMessagesUnpricedTiers({ id: 'msg' })).toBeUndefined();
    expect(tiers({ service_tier: 'priority', speed: 'fast', inference_geo: 'us' })).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
      { field: 'speed', reported: 'fast', tier: 'fast' },
      { field: 'inference_geo', reported: 'us', tier: 'us' },
    ]);
    expect(tiers({ service_tier: 'batch', inference_geo: 'eu' })).toEqual([
      { field: 'service_tier', reported: 'batch', tier: 'batch' },
      { field: 'inference_geo', reported: 'eu', tier: 'other' },
    ]);
  });

  it('reads a stream from message_start, message_delta naming it again or not', () => {
    const priority = [{ field: 'service_tier', reported: 'priority', tier: 'priority' }];
    expect(
      streamedTiers([
        {
          type: 'message_start',
          message: { usage: { input_tokens: 10, service_tier: 'priority', inference_geo: 'us' } },
        },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } },
        { type: 'message_delta', delta: {}, usage: { output_tokens: 1, inference_geo: 'global' } },
      ]),
    ).toEqual([priority, priority]);
    const standardStream = new MessagesStreamRelay();
    standardStream.push(
      sse([
        { type: 'message_start', message: { usage: { input_tokens: 10, ...standard } } },
        { type: 'message_delta', delta: {}, usage: { output_tokens: 1 } },
      ]),
    );
    expect(standardStream.unpricedTiers).toBeUndefined();
  });

  it('keeps what message_start named when message_delta names it null (decision 354)', () => {
    const named = [
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
      { field: 'speed', reported: 'fast', tier: 'fast' },
    ];
    expect(
      streamedTiers([
        {
          type: 'message_start',
          message: { usage: { input_tokens: 10, service_tier: 'priority', speed: 'fast' } },
        },
        {
          type: 'message_delta',
          delta: {},
          usage: { output_tokens: 1, service_tier: null, speed: null, inference_geo: null },
        },
      ]),
    ).toEqual([named, named]);
  });
});

describe('promptCacheWrite', () => {
  const body = (extra: Record<string, unknown>) => ({
    model: 'vendor_a/claude-haiku-4-5',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

  it('is none for a body without cache_control', () => {
    expect(promptCacheWrite(body({ system: [{ type: 'text', text: 'cache_control' }] }))).toBe(
      'none',
    );
  });

  it('finds cache_control wherever the protocol allows it', () => {
    const marker = { cache_control: { type: 'ephemeral' } };
    const places = [
      { cache_control: { type: 'ephemeral' } },
      { system: [{ type: 'text', text: 'rules', ...marker }] },
      { tools: [{ name: 'lookup', input_schema: { type: 'object' }, ...marker }] },
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', ...marker }] }] },
      {
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [{ type: 'text', text: 'r', ...marker }],
              },
            ],
          },
        ],
      },
    ];
    for (const place of places) expect(promptCacheWrite(body(place))).toBe('write');
  });

  it('is a one-hour write when any breakpoint asks for a ttl other than five minutes', () => {
    const block = (ttl: unknown) => ({
      type: 'text',
      text: 'x',
      cache_control: { type: 'ephemeral', ttl },
    });
    expect(promptCacheWrite(body({ system: [block('5m'), block('5m')] }))).toBe('write');
    expect(promptCacheWrite(body({ system: [block('5m'), block('1h')] }))).toBe('write_1h');
    expect(promptCacheWrite(body({ tools: [{ name: 't', ...block('2h') }] }))).toBe('write_1h');
    expect(promptCacheWrite(body({ system: [block(3600)] }))).toBe('write_1h');
  });

  it('finds the name however the JSON text spelled it', () => {
    const parsed: unknown = JSON.parse(
      '{"system":[{"type":"text","text":"x","cache\\u005fcontrol":{"type":"ephemeral","\\u0074tl":"1h"}}]}',
    );
    expect(promptCacheWrite(parsed)).toBe('write_1h');
  });
});

describe('serverToolCosts', () => {
  const search = (extra: Record<string, unknown> = {}) => ({
    type: 'web_search_20250305',
    name: 'web_search',
    max_uses: 4,
    ...extra,
  });

  it('sums the searches web search tools allow; other tools cost tokens only', () => {
    expect(
      serverToolCosts(
        [
          { name: 'lookup', input_schema: { type: 'object' } },
          search(),
          { type: 'web_fetch_20250910', name: 'web_fetch' },
          search({ max_uses: 1 }),
        ],
        true,
      ),
    ).toEqual({ webSearches: 5 });
    expect(serverToolCosts(undefined, true)).toEqual({ webSearches: 0 });
  });

  it('refuses a search without a bound, one gw cannot price, and code execution', () => {
    for (const maxUses of [undefined, 0, 1.5, '3', 1001]) {
      expect(serverToolCosts([search({ max_uses: maxUses })], true)).toHaveProperty('refusal');
    }
    expect(serverToolCosts([search({ max_uses: 1000 })], true)).toEqual({ webSearches: 1000 });
    expect(serverToolCosts([search()], false)).toEqual({
      refusal:
        'tools[0]: web_search_20250305 is billed by the vendor per search, which gw does not meter for this model',
    });
    expect(serverToolCosts([{ type: 'code_execution_20250522' }], true)).toHaveProperty('refusal');
  });
});
