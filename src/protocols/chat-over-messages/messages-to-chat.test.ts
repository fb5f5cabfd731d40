import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chatToMessagesBody } from './chat-to-messages.js';
import { MessagesToChatStreamRelay, messageToChatCompletion } from './messages-to-chat.js';
import { messagesEvent } from '../../../test/support/messages-events.js';

// A recorded vendor_a stream: text, then a tool call whose arguments arrive in pieces.
const recorded = [
  messagesEvent('message_start', {
    message: {
      id: 'msg_1',
      model: 'claude-haiku-4-5',
      usage: { input_tokens: 21, output_tokens: 1 },
    },
  }),
  messagesEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  messagesEvent('ping', {}),
  messagesEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Héllo ' } }),
  messagesEvent('content_block_delta', {
    index: 0,
    delta: { type: 'text_delta', text: 'wörld 👋' },
  }),
  messagesEvent('content_block_stop', { index: 0 }),
  messagesEvent('content_block_start', {
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
  }),
  messagesEvent('content_block_delta', {
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '{"city":' },
  }),
  messagesEvent('content_block_delta', {
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '"Paris"}' },
  }),
  messagesEvent('content_block_stop', { index: 1 }),
  messagesEvent('message_delta', {
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: 17 },
  }),
  messagesEvent('message_stop', {}),
].join('');

function translate(bytes: Buffer, cuts: number[], wantsUsage: boolean) {
  const relay = new MessagesToChatStreamRelay('vendor_a', wantsUsage);
  let out = '';
  let start = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    out += relay.push(bytes.subarray(start, cut));
    start = cut;
  }
  out += relay.push(bytes.subarray(start)) + relay.end();
  const chunks = out
    .split('\n\n')
    .filter(Boolean)
    .map((event) => JSON.parse(event.slice('data: '.length)) as Record<string, unknown>)
    .map(({ created: _created, ...rest }) => rest);
  return { chunks, usage: relay.usage, done: relay.done, reported: relay.reportedPrompt };
}

describe('vendor_a stream → chat completion chunks', () => {
  const bytes = Buffer.from(recorded, 'utf8');
  const whole = translate(bytes, [], true);

  it('translates text, tool-call deltas, the finish reason and the usage chunk', () => {
    type Chunk = {
      choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
      usage?: unknown;
    };
    const chunks = whole.chunks as unknown as Chunk[];
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Héllo wörld 👋');
    const toolDeltas = chunks.flatMap(
      (chunk) =>
        (chunk.choices[0]?.delta.tool_calls as Array<{
          id?: string;
          function: { name?: string; arguments: string };
        }>) ?? [],
    );
    expect(toolDeltas[0]).toMatchObject({
      id: 'toolu_1',
      function: { name: 'get_weather', arguments: '' },
    });
    expect(toolDeltas.map((delta) => delta.function.arguments).join('')).toBe('{"city":"Paris"}');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 21, completion_tokens: 17, total_tokens: 38 },
    });
    expect(whole.usage).toEqual({
      inputTokens: 21,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 17,
      webSearchRequests: 0,
    });
    expect(whole.done).toBe(true);
  });

  it('gives the same chunks however the bytes are split (golden)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 30 }),
        (cuts) => {
          expect(translate(bytes, cuts, true)).toEqual(whole);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('turns a vendor error event into a chat error event and leaves the stream incomplete', () => {
    const cut = recorded.indexOf('event: message_delta');
    const failed = Buffer.from(
      recorded.slice(0, cut) +
        messagesEvent('error', {
          error: { type: 'overloaded_error', message: 'Overloaded: prompt was x' },
        }),
      'utf8',
    );
    const { chunks, done, usage, reported } = translate(failed, [], true);
    // No output count came, but the input tokens of message_start are known and billed.
    expect(usage).toBeUndefined();
    expect(reported).toEqual({
      inputTokens: 21,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
    });
    expect(chunks.at(-1)).toEqual({
      error: {
        code: 'gw_upstream_error',
        type: 'overloaded_error',
        message: 'vendor_a failed mid-stream (overloaded_error); the answer is incomplete',
      },
    });
    expect(done).toBe(false);
  });

  it('leaves out the usage chunk when the client did not ask for it', () => {
    const plain = translate(bytes, [], false);
    expect(plain.chunks).toHaveLength(whole.chunks.length - 1);
    expect(plain.usage).toEqual(whole.usage);
  });
});

describe('chat request → messages request', () => {
  it('moves system prompts, merges tool results, translates tools, stops and tool choice', () => {
    const body = chatToMessagesBody(
      {
        model: 'vendor_a/claude-haiku-4-5',
        messages: [
          { role: 'system', content: 'Be brief.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Weather?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'w', arguments: '{"city":"Oslo"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        tools: [
          {
            type: 'function',
            function: {
              name: 'w',
              description: 'weather',
              parameters: { type: 'object', properties: {} },
            },
          },
        ],
        tool_choice: 'required',
        stop: 'END',
        temperature: 0.2,
        presence_penalty: 1,
        user: 'u1',
      },
      { upstreamModel: 'claude-haiku-4-5', maxTokens: 100, stream: true },
    );
    expect(body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      stream: true,
      system: 'Be brief.',
      temperature: 0.2,
      stop_sequences: ['END'],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'c1', name: 'w', input: { city: 'Oslo' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'sunny' }] },
      ],
      tools: [
        { name: 'w', description: 'weather', input_schema: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'any' },
    });
  });

  it('merges a turn of more content parts than a call takes arguments', () => {
    // Spread into one push(), 200,000 blocks overflowed the stack (RangeError). Bodies
    // past 100,000 containers are refused before this (decision 325): a guard for a raised bound.
    const parts = Array.from({ length: 200_000 }, (_, index) => ({
      type: 'text',
      text: `${index}`,
    }));
    const body = chatToMessagesBody(
      {
        model: 'vendor_a/claude-haiku-4-5',
        messages: [
          { role: 'user', content: 'first' },
          { role: 'user', content: parts },
        ],
      },
      { upstreamModel: 'm', maxTokens: 10, stream: false },
    );
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }, ...parts] },
    ]);
  });

  it('merges consecutive tool results and a following user turn; keeps developer prompts', () => {
    const body = chatToMessagesBody(
      {
        model: 'vendor_a/claude-haiku-4-5',
        messages: [
          { role: 'developer', content: [{ type: 'text', text: 'Rule one.' }] },
          { role: 'system', content: 'Rule two.' },
          { role: 'user', content: 'Two cities?' },
          {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              { id: 'a', type: 'function', function: { name: 'w', arguments: '{"city":"A"}' } },
              { id: 'b', type: 'function', function: { name: 'w', arguments: '' } },
            ],
          },
          { role: 'tool', tool_call_id: 'a', content: [{ type: 'text', text: 'rain' }] },
          { role: 'tool', tool_call_id: 'b', content: 'snow' },
          { role: 'user', content: 'And so?' },
        ],
        stop: ['X', 'Y'],
        response_format: { type: 'json_object' },
        seed: 7,
        unknown_parameter: true,
      },
      { upstreamModel: 'm', maxTokens: 10, stream: false },
    );
    expect(body).toEqual({
      model: 'm',
      max_tokens: 10,
      system: 'Rule one.\n\nRule two.',
      stop_sequences: ['X', 'Y'],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Two cities?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'a', name: 'w', input: { city: 'A' } },
            { type: 'tool_use', id: 'b', name: 'w', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'a', content: 'rain' },
            { type: 'tool_result', tool_use_id: 'b', content: 'snow' },
            { type: 'text', text: 'And so?' },
          ],
        },
      ],
    });
  });

  it('carries parallel_tool_calls: false as disable_parallel_tool_use', () => {
    const tools = [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }];
    const translate = (extra: Record<string, unknown>) =>
      chatToMessagesBody(
        { model: 'x', messages: [{ role: 'user', content: 'q' }], tools, ...extra },
        { upstreamModel: 'm', maxTokens: 10, stream: false },
      ).tool_choice;
    expect(translate({ parallel_tool_calls: false })).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(
      translate({
        parallel_tool_calls: false,
        tool_choice: { type: 'function', function: { name: 'w' } },
      }),
    ).toEqual({ type: 'tool', name: 'w', disable_parallel_tool_use: true });
    expect(translate({ parallel_tool_calls: false, tool_choice: 'none' })).toEqual({
      type: 'none',
    });
    expect(translate({ parallel_tool_calls: true })).toBeUndefined();
  });

  it('turns a message into a chat completion', () => {
    const completion = messageToChatCompletion({
      id: 'msg_9',
      model: 'claude-haiku-4-5',
      content: [{ type: 'text', text: 'Hi' }],
      stop_reason: 'max_tokens',
      usage: { input_tokens: 3, output_tokens: 4 },
    } as Parameters<typeof messageToChatCompletion>[0]);
    expect(completion).toMatchObject({
      id: 'chatcmpl-msg_9',
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'length' },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });
});
