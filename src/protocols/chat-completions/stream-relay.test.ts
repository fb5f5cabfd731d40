import { describe, expect, it } from 'vitest';
import { UNPARSED_CHUNKS_MAX_BYTES, ChatCompletionsStreamRelay } from './stream-relay.js';
import { readChatCompletionsUnpricedTiers } from './usage.js';

const encoder = new TextEncoder();
const chunk = (body: Record<string, unknown>) => `data: ${JSON.stringify(body)}\n\n`;
const content = (text: string) =>
  chunk({
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: text } }],
    usage: null,
  });
const toolArguments = (text: string) =>
  chunk({
    choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: text } }] } }],
    usage: null,
  });
const usageChunk = chunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } });

describe('vendor_b stream relay', () => {
  it('relays chunks unchanged, reads usage, and strips the usage chunk the client did not ask for', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    const events = content('Hel') + content('lo') + usageChunk + 'data: [DONE]\n\n';
    const out =
      relay.push(encoder.encode(events.slice(0, 50))) +
      relay.push(encoder.encode(events.slice(50)));
    expect(out).toBe(content('Hel') + content('lo'));
    expect(relay.usage).toEqual({
      inputTokens: 7,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 3,
      webSearchRequests: 0,
    });
    expect(relay.done).toBe(true);
  });

  it('keeps the usage chunk for a client that asked for it', () => {
    const relay = new ChatCompletionsStreamRelay(true);
    expect(relay.push(encoder.encode(content('a') + usageChunk))).toBe(content('a') + usageChunk);
  });

  it('gives the generated text, in order, when the vendor never reports usage', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    relay.push(
      encoder.encode(
        content('The ') + toolArguments('{"x":') + content('end') + 'data: not json\n\n',
      ),
    );
    expect(relay.usage).toBeUndefined();
    expect(relay.producedText).toEqual(['The ', '{"x":', 'end']);
  });

  it('holds a long stream as its text, not as every chunk, and still gives all of it in order', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    const words = Array.from({ length: 20_000 }, (_, index) => `w${index} `);
    for (let index = 0; index < words.length; index += 100) {
      relay.push(
        encoder.encode(
          words
            .slice(index, index + 100)
            .map(content)
            .join(''),
        ),
      );
      expect(relay.unparsedChunkBytes).toBeLessThanOrEqual(UNPARSED_CHUNKS_MAX_BYTES);
    }
    expect(relay.producedText).toEqual(words);
  });

  it('reads usage however the vendor spaces its JSON', () => {
    const relay = new ChatCompletionsStreamRelay(true);
    relay.push(
      encoder.encode(
        'data: {"choices": [{"delta": {"content": "x"}}], "usage": null}\n\n' +
          'data: {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}}\n\n',
      ),
    );
    expect(relay.usage).toEqual({
      inputTokens: 4,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 1,
      webSearchRequests: 0,
    });
  });

  it('reads the prompt tokens served from the cache, never more than the prompt', () => {
    const cachedUsage = (cached: unknown) =>
      chunk({
        choices: [],
        usage: {
          prompt_tokens: 50,
          completion_tokens: 2,
          prompt_tokens_details: { cached_tokens: cached },
        },
      });
    for (const [cached, read] of [
      [40, 40],
      [80, 50],
      [-1, 0],
      ['40', 0],
      [null, 0],
    ] as const) {
      const relay = new ChatCompletionsStreamRelay(true);
      relay.push(encoder.encode(cachedUsage(cached)));
      expect(relay.usage).toEqual({
        inputTokens: 50,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        cacheReadTokens: read,
        outputTokens: 2,
        webSearchRequests: 0,
      });
    }
  });

  it('reads usage that comes on a content chunk', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    const last = chunk({
      choices: [{ index: 0, delta: { content: '!' } }],
      usage: { prompt_tokens: 2, completion_tokens: 1 },
    });
    expect(relay.push(encoder.encode(last))).toBe(last);
    expect(relay.usage).toEqual({
      inputTokens: 2,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 1,
      webSearchRequests: 0,
    });
    expect(relay.producedText).toEqual(['!']);
  });
});

describe('the tier vendor_b says it served at (decision 342)', () => {
  const served = (serviceTier: unknown) => ({
    object: 'chat.completion.chunk',
    service_tier: serviceTier,
    choices: [],
    usage: { prompt_tokens: 7, completion_tokens: 3 },
  });

  it('names a JSON answer served at a tier other than default; auto is a request value', () => {
    expect(readChatCompletionsUnpricedTiers({ service_tier: 'default' })).toBeUndefined();
    expect(readChatCompletionsUnpricedTiers({ service_tier: null })).toBeUndefined();
    expect(readChatCompletionsUnpricedTiers({ object: 'chat.completion' })).toBeUndefined();
    expect(readChatCompletionsUnpricedTiers({ service_tier: 'flex' })).toEqual([
      { field: 'service_tier', reported: 'flex', tier: 'flex' },
    ]);
    expect(readChatCompletionsUnpricedTiers({ service_tier: 'auto' })).toEqual([
      { field: 'service_tier', reported: 'auto', tier: 'other' },
    ]);
  });

  it('reads the tier of a stream from its usage chunk, the one chunk it parses', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    relay.push(encoder.encode(content('a') + chunk(served('priority')) + 'data: [DONE]\n\n'));
    expect(relay.unpricedTiers).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
    ]);
    const standard = new ChatCompletionsStreamRelay(false);
    standard.push(encoder.encode(content('a') + chunk(served('default')) + 'data: [DONE]\n\n'));
    expect(standard.unpricedTiers).toBeUndefined();
  });

  /** A content chunk as vendor_b streams it with usage asked for: the tier, `"usage":null`. */
  const tiered = (text: string, serviceTier: string) =>
    chunk({
      object: 'chat.completion.chunk',
      service_tier: serviceTier,
      choices: [{ index: 0, delta: { content: text } }],
      usage: null,
    });

  it('reads the tier from the chunks relayed when the stream ends before its usage chunk', () => {
    // Short (kept whole) and long (read in batches as it goes): decision 354.
    for (const count of [2, 200]) {
      const relay = new ChatCompletionsStreamRelay(false);
      for (let index = 0; index < count; index += 1) {
        relay.push(encoder.encode(tiered('word ', 'priority')));
      }
      relay.end();
      expect(relay.usage).toBeUndefined();
      expect(relay.unpricedTiers).toEqual([
        { field: 'service_tier', reported: 'priority', tier: 'priority' },
      ]);
      expect(relay.producedText).toHaveLength(count); // the text is still all there to count
    }
    const standard = new ChatCompletionsStreamRelay(false);
    standard.push(encoder.encode(tiered('a', 'default') + tiered('b', 'default')));
    expect(standard.unpricedTiers).toBeUndefined();
  });

  it('takes the usage chunk’s tier over the chunks before it, and parses none of them', () => {
    const relay = new ChatCompletionsStreamRelay(false);
    relay.push(encoder.encode(tiered('a', 'flex') + chunk(served('priority'))));
    expect(relay.unpricedTiers).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
    ]);
    expect(relay.unparsedChunkBytes).toBeGreaterThan(0); // the content chunk was never read
  });
});
