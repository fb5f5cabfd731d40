// The built-in mock vendors, driven by the vendors' real client libraries: wire formats,
// exact usage, tool calls, key-based faults and directives.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_TOKEN_WORDS, outputText } from '../src/mock-vendors/output.js';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { countInputTokens, countTextTokens } from '../src/tokens/count.js';
import { chatCompletionTexts, messagesTexts } from '../src/tokens/request-texts.js';

let mock: RunningMockVendors;

beforeAll(async () => {
  mock = await startMockVendors({ port: 0 });
});
afterAll(async () => {
  await mock.close();
});

const openai = (apiKey = 'sk-test', maxRetries = 0): OpenAI =>
  new OpenAI({ apiKey, baseURL: `${mock.url}/v1`, maxRetries });
const anthropic = (apiKey = 'sk-ant-test'): Anthropic =>
  new Anthropic({ apiKey, baseURL: mock.url, maxRetries: 0 });

/** What a rejected call threw. */
async function thrown(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

const weatherSchema = {
  type: 'object' as const,
  properties: {
    city: { type: 'string' },
    days: { type: 'integer' },
    metric: { type: 'boolean' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['city'],
};
const weatherArguments = { city: 'mock', days: 1, metric: true, unit: 'celsius', tags: ['mock'] };

describe('generated output', () => {
  it('uses words that are each exactly one o200k token, so N words are N tokens', () => {
    for (const word of ONE_TOKEN_WORDS) expect(countTextTokens(word)).toBe(1);
    for (const tokens of [0, 1, 2, 7, 16, 33, 100, 5000])
      expect(countTextTokens(outputText(tokens))).toBe(tokens);
  });
});

describe('vendor_b (chat completions)', () => {
  const body = {
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system' as const, content: 'You are terse.' },
      { role: 'user' as const, content: 'Say hello. mock:output_tokens=7' },
    ],
  };

  it('answers a chat.completion with exact usage and a request id', async () => {
    const { data: completion, response } = await openai()
      .chat.completions.create(body)
      .withResponse();
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.model).toBe('gpt-4o-mini');
    expect(typeof completion.created).toBe('number');
    const choice = completion.choices[0]!;
    expect(choice).toMatchObject({ index: 0, finish_reason: 'stop', logprobs: null });
    expect(choice.message).toMatchObject({ role: 'assistant', refusal: null });
    expect(countTextTokens(choice.message.content!)).toBe(7);
    expect(completion.usage).toEqual({
      prompt_tokens: countInputTokens(chatCompletionTexts(body)),
      completion_tokens: 7,
      total_tokens: countInputTokens(chatCompletionTexts(body)) + 7,
    });
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('generates 16 tokens by default and stops at max_tokens with finish_reason length', async () => {
    const plain = await openai().chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.usage!.completion_tokens).toBe(16);
    const capped = await openai().chat.completions.create({
      model: 'gpt-4o',
      max_completion_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(capped.choices[0]!.finish_reason).toBe('length');
    expect(capped.usage!.completion_tokens).toBe(3);
    expect(countTextTokens(capped.choices[0]!.message.content!)).toBe(3);
  });

  it('streams one delta per token, then finish_reason, the usage chunk and [DONE]', async () => {
    const stream = await openai().chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const contentChunks = chunks.filter((chunk) => chunk.choices[0]?.delta.content);
    expect(contentChunks).toHaveLength(7);
    const text = contentChunks.map((chunk) => chunk.choices[0]!.delta.content).join('');
    expect(countTextTokens(text)).toBe(7);
    const last = chunks.at(-1)!;
    const finish = chunks.at(-2)!;
    expect(finish.choices[0]!.finish_reason).toBe('stop');
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: countInputTokens(chatCompletionTexts(body)),
      completion_tokens: 7,
      total_tokens: countInputTokens(chatCompletionTexts(body)) + 7,
    });
    for (const chunk of chunks) expect(chunk.object).toBe('chat.completion.chunk');
  });

  it('sends no usage chunk without stream_options.include_usage', async () => {
    const stream = await openai().chat.completions.create({ ...body, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true);
    expect(chunks.every((chunk) => chunk.usage === undefined || chunk.usage === null)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  const tools = [
    {
      type: 'function' as const,
      function: { name: 'lookup', parameters: { type: 'object', properties: {} } },
    },
    { type: 'function' as const, function: { name: 'get_weather', parameters: weatherSchema } },
  ];

  it('calls a tool with arguments built from its schema, and counts them as output', async () => {
    const request = {
      model: 'gpt-4o-mini',
      tools,
      tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
    };
    const completion = await openai().chat.completions.create(request);
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(weatherArguments);
    expect(completion.usage!.prompt_tokens).toBe(countInputTokens(chatCompletionTexts(request)));
    expect(completion.usage!.completion_tokens).toBe(
      countTextTokens('get_weather') + countTextTokens(call.function.arguments),
    );

    const firstTool = await openai().chat.completions.create({ ...request, tool_choice: 'auto' });
    expect(firstTool.choices[0]!.message.tool_calls![0]).toMatchObject({
      function: { name: 'lookup', arguments: '{}' },
    });
  });

  it('streams tool arguments as fragments with the same usage as the non-streaming call', async () => {
    const request = {
      model: 'gpt-4o-mini',
      tools: [tools[1]!],
      messages: [{ role: 'user' as const, content: 'Weather?' }],
    };
    const stream = await openai().chat.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    let args = '';
    let fragments = 0;
    let finishReason: string | null = null;
    let completionTokens = 0;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      const fragment = delta?.tool_calls?.[0]?.function?.arguments;
      if (fragment) {
        args += fragment;
        fragments += 1;
      }
      finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
      if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
    }
    expect(fragments).toBeGreaterThan(1);
    expect(JSON.parse(args)).toEqual(weatherArguments);
    expect(finishReason).toBe('tool_calls');
    const once = await openai().chat.completions.create(request);
    expect(completionTokens).toBe(once.usage!.completion_tokens);
  });

  it('answers a tool result (or tool_choice none) with text', async () => {
    const afterTool = await openai().chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    expect(afterTool.choices[0]!.finish_reason).toBe('stop');
    expect(afterTool.choices[0]!.message.content).toBeTruthy();
    const none = await openai().chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      tool_choice: 'none',
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
  });

  it('lists models in its own list format', async () => {
    const models = [];
    for await (const model of openai().models.list()) models.push(model);
    expect(models.length).toBeGreaterThan(0);
    expect(models[0]).toMatchObject({ object: 'model', owned_by: 'vendor_b' });
  });
});

describe('vendor_a (messages)', () => {
  const body = {
    model: 'claude-haiku-4-5',
    max_tokens: 100,
    system: 'You are terse.',
    messages: [{ role: 'user' as const, content: 'Say hello. mock:output_tokens=6' }],
  };

  it('answers a message with exact usage and a request id', async () => {
    const { data: message, response } = await anthropic().messages.create(body).withResponse();
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_/);
    const block = message.content[0]!;
    if (block.type !== 'text') throw new Error('expected text');
    expect(countTextTokens(block.text)).toBe(6);
    expect(message.usage.input_tokens).toBe(countInputTokens(messagesTexts(body)));
    expect(message.usage.output_tokens).toBe(6);
    expect(response.headers.get('request-id')).toMatch(/^req_/);
  });

  it('stops at max_tokens with stop_reason max_tokens', async () => {
    const message = await anthropic().messages.create({ ...body, max_tokens: 2 });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(2);
  });

  it('refuses a request without max_tokens with invalid_request_error', async () => {
    const { max_tokens: _omitted, ...withoutMax } = body;
    const error = await thrown(() =>
      anthropic().messages.create(withoutMax as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).type).toBe(
      'invalid_request_error',
    );
  });

  it('streams the event sequence with one text delta per token and exact usage', async () => {
    const stream = await anthropic().messages.create({ ...body, stream: true });
    const types: string[] = [];
    let text = '';
    let deltas = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'message_start') inputTokens = event.message.usage.input_tokens;
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        text += event.delta.text;
        deltas += 1;
      }
      if (event.type === 'message_delta') {
        outputTokens = event.usage.output_tokens;
        expect(event.delta.stop_reason).toBe('end_turn');
      }
    }
    expect(types[0]).toBe('message_start');
    expect(types.slice(1, 2)).toEqual(['content_block_start']);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(deltas).toBe(6);
    expect(countTextTokens(text)).toBe(6);
    expect(inputTokens).toBe(countInputTokens(messagesTexts(body)));
    expect(outputTokens).toBe(6);
  });

  const tools = [
    { name: 'lookup', input_schema: { type: 'object' as const, properties: {} } },
    { name: 'get_weather', description: 'Weather', input_schema: weatherSchema },
  ];

  it('calls a tool with input built from its schema, streamed as input_json_delta', async () => {
    const request = {
      model: 'claude-haiku-4-5',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'tool' as const, name: 'get_weather' },
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
    };
    const message = await anthropic().messages.create(request);
    expect(message.stop_reason).toBe('tool_use');
    const block = message.content[0]!;
    if (block.type !== 'tool_use') throw new Error('expected tool_use');
    expect(block.id).toMatch(/^toolu_/);
    expect(block.name).toBe('get_weather');
    expect(block.input).toEqual(weatherArguments);
    expect(message.usage.input_tokens).toBe(countInputTokens(messagesTexts(request)));
    expect(message.usage.output_tokens).toBe(
      countTextTokens('get_weather') + countTextTokens(JSON.stringify(weatherArguments)),
    );

    const streamed = await anthropic().messages.stream(request).finalMessage();
    expect(streamed.content[0]).toMatchObject({ type: 'tool_use', input: weatherArguments });
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.usage.output_tokens).toBe(message.usage.output_tokens);
  });

  it('answers a tool result with text', async () => {
    const message = await anthropic().messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 50,
      tools,
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }],
        },
      ],
    });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content[0]!.type).toBe('text');
  });

  it('counts tokens exactly as the message usage reports them', async () => {
    const counted = await anthropic().messages.countTokens({
      model: body.model,
      system: body.system,
      messages: body.messages,
      tools,
    });
    const message = await anthropic().messages.create({
      ...body,
      tools,
      tool_choice: { type: 'none' },
    });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
  });

  it('lists models in its own list format when the version header is sent', async () => {
    const page = await anthropic().models.list();
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data[0]).toMatchObject({ type: 'model' });
    expect(typeof page.data[0]!.display_name).toBe('string');
  });
});

describe('key-based behaviours', () => {
  const chat = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user' as const, content: 'hi' }],
  };
  const message = { model: 'claude-haiku-4-5', max_tokens: 10, messages: chat.messages };

  it('answers a missing key with 401 in each vendor format', async () => {
    const post = (path: string, payload: unknown): Promise<Response> =>
      fetch(`${mock.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    const chatAnswer = await post('/v1/chat/completions', chat);
    expect(chatAnswer.status).toBe(401);
    expect(await chatAnswer.json()).toMatchObject({
      error: { type: 'invalid_request_error', param: null, code: null },
    });
    const messagesAnswer = await post('/v1/messages', message);
    expect(messagesAnswer.status).toBe(401);
    expect(await messagesAnswer.json()).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });

  it('refuses mock-bad keys as AuthenticationError', async () => {
    const chatError = await thrown(() => openai('mock-bad-1').chat.completions.create(chat));
    expect(chatError).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((chatError as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_api_key');
    const messageError = await thrown(() => anthropic('mock-bad-1').messages.create(message));
    expect(messageError).toBeInstanceOf(Anthropic.AuthenticationError);
    // vendor_a also accepts the key as a bearer token.
    const bearer = new Anthropic({ authToken: 'mock-bad-2', baseURL: mock.url, maxRetries: 0 });
    expect(await thrown(() => bearer.messages.create(message))).toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
  });

  it('rate-limits mock-429 keys with retry-after: 2', async () => {
    const chatError = await thrown(() => openai('mock-429-x').chat.completions.create(chat));
    expect(chatError).toBeInstanceOf(OpenAI.RateLimitError);
    const chatLimit = chatError as InstanceType<typeof OpenAI.RateLimitError>;
    expect(chatLimit.headers.get('retry-after')).toBe('2');
    expect(chatLimit.code).toBe('rate_limit_exceeded');
    const messageError = await thrown(() => anthropic('mock-429-x').messages.create(message));
    expect(messageError).toBeInstanceOf(Anthropic.RateLimitError);
    const messageLimit = messageError as InstanceType<typeof Anthropic.RateLimitError>;
    expect(messageLimit.headers.get('retry-after')).toBe('2');
    expect(messageLimit.type).toBe('rate_limit_error');
  });

  it("says the retry-after that mock:retry_after asks for, on a key's rate limit or the directive's", async () => {
    const longer = (text: string) => [{ role: 'user' as const, content: text }];
    const chatError = await thrown(() =>
      openai('mock-429-x').chat.completions.create({
        ...chat,
        messages: longer('hi mock:retry_after=30'),
      }),
    );
    const chatLimit = chatError as InstanceType<typeof OpenAI.RateLimitError>;
    expect(chatLimit).toBeInstanceOf(OpenAI.RateLimitError);
    expect(chatLimit.headers.get('retry-after')).toBe('30');
    expect(chatLimit.message).toContain('Please try again in 30s.');
    const messageError = await thrown(() =>
      anthropic().messages.create({
        ...message,
        messages: longer('hi mock:fault=rate_limit mock:retry_after=45'),
      }),
    );
    const messageLimit = messageError as InstanceType<typeof Anthropic.RateLimitError>;
    expect(messageLimit).toBeInstanceOf(Anthropic.RateLimitError);
    expect(messageLimit.headers.get('retry-after')).toBe('45');
    expect(messageLimit.type).toBe('rate_limit_error');
    // Without the directive, the usual 2 s.
    const usual = await thrown(() =>
      openai().chat.completions.create({
        ...chat,
        messages: longer('hi mock:fault=rate_limit'),
      }),
    );
    expect((usual as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe(
      '2',
    );
  });

  it('answers mock-quota keys with each vendor insufficient-quota error', async () => {
    const chatError = await thrown(() => openai('mock-quota-x').chat.completions.create(chat));
    expect(chatError).toBeInstanceOf(OpenAI.RateLimitError);
    const chatQuota = chatError as InstanceType<typeof OpenAI.RateLimitError>;
    expect(chatQuota.code).toBe('insufficient_quota');
    expect(chatQuota.type).toBe('insufficient_quota');
    const messageError = await thrown(() => anthropic('mock-quota-x').messages.create(message));
    expect(messageError).toBeInstanceOf(Anthropic.APIError);
    const messageQuota = messageError as InstanceType<typeof Anthropic.APIError>;
    expect(messageQuota.status).toBe(402);
    expect(messageQuota.type).toBe('billing_error');
  });

  it('rate-limits mock-flaky keys on every other call', async () => {
    const outcomes: string[] = [];
    for (let call = 0; call < 6; call += 1) {
      const client = call % 2 === 0 ? openai('mock-flaky-x') : undefined;
      const run = client
        ? () => client.chat.completions.create(chat)
        : () => anthropic('mock-flaky-x').messages.create(message);
      outcomes.push(
        await run().then(
          () => 'ok',
          (error: unknown) => (error instanceof Error ? error.constructor.name : 'unknown'),
        ),
      );
    }
    expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(3);
    for (let call = 1; call < outcomes.length; call += 1)
      expect(outcomes[call] === 'ok').not.toBe(outcomes[call - 1] === 'ok');
  });

  it('leaves models and count_tokens to authentication only', async () => {
    const models = [];
    for await (const model of openai('mock-429-x').models.list()) models.push(model);
    expect(models.length).toBeGreaterThan(0);
    await expect(anthropic('mock-bad').models.list()).rejects.toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
  });
});

describe('directives', () => {
  const chatWith = (text: string) => ({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user' as const, content: text }],
  });
  const messageWith = (text: string) => ({
    model: 'claude-haiku-4-5',
    max_tokens: 100,
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }],
  });

  it('plays rate_limit, quota, server_error and overloaded as each vendor would', async () => {
    const cases = [
      ['rate_limit', OpenAI.RateLimitError, 429, Anthropic.RateLimitError, 429],
      ['quota', OpenAI.RateLimitError, 429, Anthropic.APIError, 402],
      ['server_error', OpenAI.InternalServerError, 500, Anthropic.InternalServerError, 500],
      ['overloaded', OpenAI.InternalServerError, 503, Anthropic.InternalServerError, 529],
    ] as const;
    for (const [fault, chatClass, chatStatus, messageClass, messageStatus] of cases) {
      const chatError = await thrown(() =>
        openai().chat.completions.create(chatWith(`go mock:fault=${fault}`)),
      );
      expect(chatError).toBeInstanceOf(chatClass);
      expect((chatError as InstanceType<typeof OpenAI.APIError>).status).toBe(chatStatus);
      const messageError = await thrown(() =>
        anthropic().messages.create(messageWith(`go mock:fault=${fault}`)),
      );
      expect(messageError).toBeInstanceOf(messageClass);
      expect((messageError as InstanceType<typeof Anthropic.APIError>).status).toBe(messageStatus);
    }
  });

  it('cut_stream ends a vendor_b stream early: no finish_reason, no usage, an error', async () => {
    const stream = await openai().chat.completions.create({
      ...chatWith('go mock:fault=cut_stream mock:output_tokens=20'),
      stream: true,
      stream_options: { include_usage: true },
    });
    let contentChunks = 0;
    let finished = false;
    let sawUsage = false;
    const error = await thrown(async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) contentChunks += 1;
        if (chunk.choices[0]?.finish_reason) finished = true;
        if (chunk.usage) sawUsage = true;
      }
    });
    expect(error).toBeInstanceOf(Error);
    expect(contentChunks).toBeGreaterThan(0);
    expect(contentChunks).toBeLessThan(20);
    expect(finished).toBe(false);
    expect(sawUsage).toBe(false);
  });

  it('cut_stream ends a vendor_a stream before message_stop', async () => {
    const stream = await anthropic().messages.create({
      ...messageWith('go mock:fault=cut_stream mock:output_tokens=20'),
      stream: true,
    });
    const types: string[] = [];
    const error = await thrown(async () => {
      for await (const event of stream) types.push(event.type);
    });
    expect(error).toBeInstanceOf(Error);
    expect(types).toContain('content_block_delta');
    expect(types).not.toContain('message_delta');
    expect(types).not.toContain('message_stop');
  });

  it('cut_stream drops a non-streaming answer as a connection error', async () => {
    expect(
      await thrown(() => openai().chat.completions.create(chatWith('mock:fault=cut_stream'))),
    ).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(
      await thrown(() => anthropic().messages.create(messageWith('mock:fault=cut_stream'))),
    ).toBeInstanceOf(Anthropic.APIConnectionError);
  });

  it('mock:latency_ms delays the answer', async () => {
    const startedAt = performance.now();
    await openai().chat.completions.create(chatWith('mock:latency_ms=150 mock:output_tokens=1'));
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(140);
  });

  it('mock:output_tokens is capped by max_tokens', async () => {
    const message = await anthropic().messages.create({
      ...messageWith('mock:output_tokens=50'),
      max_tokens: 4,
    });
    expect(message.usage.output_tokens).toBe(4);
    expect(message.stop_reason).toBe('max_tokens');
  });
});

describe('server knobs', () => {
  it('paces streams at tokensPerSecond and survives a client that goes away', async () => {
    const paced = await startMockVendors({ port: 0, tokensPerSecond: 100 });
    try {
      const client = new OpenAI({ apiKey: 'k', baseURL: `${paced.url}/v1`, maxRetries: 0 });
      const startedAt = performance.now();
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'mock:output_tokens=11' }],
      });
      let tokens = 0;
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) tokens += 1;
      expect(tokens).toBe(11);
      // 11 tokens at 100/s: the last is due 100 ms after the first.
      expect(performance.now() - startedAt).toBeGreaterThanOrEqual(95);

      const abandoned = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'mock:output_tokens=500' }],
      });
      for await (const _chunk of abandoned) break; // closes the connection mid-stream
      const after = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'mock:output_tokens=2' }],
      });
      expect(after.usage!.completion_tokens).toBe(2);
    } finally {
      await paced.close();
    }
  });

  it('injects server errors into faultRate of completions, deterministically', async () => {
    const faulty = await startMockVendors({ port: 0, faultRate: 0.5, defaultOutputTokens: 3 });
    try {
      const client = new OpenAI({ apiKey: 'k', baseURL: `${faulty.url}/v1`, maxRetries: 0 });
      const outcomes: boolean[] = [];
      for (let call = 0; call < 6; call += 1) {
        outcomes.push(
          await client.chat.completions
            .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
            .then(
              () => true,
              () => false,
            ),
        );
      }
      expect(outcomes).toEqual([true, false, true, false, true, false]);
    } finally {
      await faulty.close();
    }
  });

  it('answers unknown routes with 404 and refuses bodies that are not JSON', async () => {
    const unknown = await fetch(`${mock.url}/v1/nothing`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    const notJson = await fetch(`${mock.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: '{nope',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
  });

  it('validates its options', async () => {
    await expect(startMockVendors({ port: -1 })).rejects.toThrow();
    await expect(startMockVendors({ faultRate: 2 })).rejects.toThrow();
  });
});

describe('request texts', () => {
  it('never throws on odd but valid bodies', () => {
    const odd: Record<string, unknown>[] = [
      {},
      { messages: null, tools: 'x' },
      { messages: [null, 1, 'x', { content: null }, { content: 42 }, { content: [null, 'a', 3] }] },
      {
        messages: [{ role: 'assistant', tool_calls: [null, { function: null }, { function: {} }] }],
      },
      { system: [{ type: 'text', text: 'sys' }, null], messages: [{ content: { text: 'obj' } }] },
    ];
    for (const body of odd) {
      expect(() => chatCompletionTexts(body)).not.toThrow();
      expect(() => messagesTexts(body)).not.toThrow();
    }
  });

  it('counts tool calls, tool results and tool definitions, and skips images', () => {
    expect(
      chatCompletionTexts({
        messages: [
          { role: 'system', content: 'sys' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c', content: 'result' },
        ],
        tools: [{ type: 'function', function: { name: 'f' } }],
      }),
    ).toEqual(['sys', 'look', 'f{"a":1}', 'result', '{"type":"function","function":{"name":"f"}}']);
    expect(
      messagesTexts({
        system: [{ type: 'text', text: 'sys' }],
        messages: [
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 't', name: 'f', input: { a: 1 } }],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'ok' }] },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            ],
          },
        ],
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
      }),
    ).toEqual(['sys', '{"a":1}', 'ok', '{"name":"f","input_schema":{"type":"object"}}']);
  });
});
