import { describe, expect, it } from 'vitest';
import { MessagesStreamUsage, readMessagesUsage } from './usage.js';
import { asksForPromptCache } from './request.js';

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
      cacheReadTokens: 40,
      outputTokens: 7,
    });
  });

  it('reads missing or malformed cache parts as none', () => {
    const usage = readMessagesUsage({
      usage: {
        input_tokens: 3,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: -5,
        output_tokens: 1,
      },
    });
    expect(usage).toEqual({
      inputTokens: 3,
      cacheWriteTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 1,
    });
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
      cacheReadTokens: 90,
    });
    expect(tracker.usage).toBeUndefined();
    tracker.observe({ type: 'message_delta', usage: { output_tokens: 4 } });
    expect(tracker.usage).toEqual({
      inputTokens: 92,
      cacheWriteTokens: 0,
      cacheReadTokens: 90,
      outputTokens: 4,
    });
  });
});

describe('asksForPromptCache', () => {
  const body = (extra: Record<string, unknown>) => ({
    model: 'vendor_a/claude-haiku-4-5',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

  it('is false for a body without cache_control', () => {
    expect(asksForPromptCache(body({ system: [{ type: 'text', text: 'cache_control' }] }))).toBe(
      false,
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
    for (const place of places) expect(asksForPromptCache(body(place))).toBe(true);
  });

  it('finds the name however the JSON text spelled it', () => {
    const parsed: unknown = JSON.parse(
      '{"system":[{"type":"text","text":"x","cache\\u005fcontrol":{"type":"ephemeral"}}]}',
    );
    expect(asksForPromptCache(parsed)).toBe(true);
  });
});
