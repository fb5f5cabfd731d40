// The gateway against a recording vendor_a stub instead of the built-in mock: what reaches the
// vendor (its key and version headers, no gateway fields), proof that a client abort
// aborts the upstream request, with the input tokens the vendor reported billed, and that a
// stream is settled and finished at the vendor's message_stop, not when its body ends.
import type { IncomingHttpHeaders } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';
import {
  messagesEvent,
  messagesMessage,
  messagesTextStream,
  textBlockStart,
  textDelta,
} from './support/messages-events.js';
import {
  answerJson,
  closeStub,
  listenLocally,
  openEventStream,
  stubVendor,
} from './support/stub-vendor.js';

const { env, db } = isolatedContext('vendor-a-stub');
let org: SeededOrg;
let gateway: GatewayProcess;
const MODEL = 'vendor_a/claude-haiku-4-5';

const STUB_KEY = 'stub-vendor-key-0123456789abcdef';
let seen: { headers: IncomingHttpHeaders; body: Record<string, unknown> } | undefined;
let upstreamClosedEarly: Promise<boolean> = Promise.resolve(false);

const stubMessage = { id: 'msg_stub', model: 'stub' };
/** The message message_start carries. */
const startedMessage = messagesMessage({
  ...stubMessage,
  usage: { input_tokens: 9, output_tokens: 1 },
});

/** max_tokens that asks the stub for a complete stream whose HTTP body then lingers open. */
const LINGER_MAX_TOKENS = 77;
const LINGER_MS = 10_000;
/** Whether the stub has ended a lingering body itself (the gateway should not wait for it). */
let lingerEndedByVendor = false;

/** vendor_a as a stub: records each request; answers JSON, or streams slowly without end. */
const stub = stubVendor((body, response, headers) => {
  seen = { headers, body };
  if (body.stream !== true) {
    answerJson(
      response,
      messagesMessage({
        ...stubMessage,
        text: 'fine',
        stopReason: 'stop_sequence',
        usage: { input_tokens: 9, output_tokens: 2 },
      }),
    );
    return;
  }
  openEventStream(response);
  if (body.max_tokens === LINGER_MAX_TOKENS) {
    response.write(messagesTextStream(startedMessage, 'done', { output_tokens: 4 }));
    const timer = setTimeout(() => {
      lingerEndedByVendor = true;
      response.end();
    }, LINGER_MS);
    response.on('close', () => clearTimeout(timer));
    return;
  }
  response.write(messagesEvent('message_start', { message: startedMessage }) + textBlockStart(0));
  // An endless slow stream: only a client abort (passed upstream) ends it.
  const timer = setInterval(() => response.write(textDelta(0, 'word ')), 40);
  upstreamClosedEarly = new Promise((resolve) =>
    response.on('close', () => {
      clearInterval(timer);
      resolve(!response.writableEnded);
    }),
  );
});

beforeAll(async () => {
  const vendorA = await listenLocally(stub);
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway({ ...env, VENDOR_A_BASE_URL: vendorA, VENDOR_A_API_KEY: STUB_KEY }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  await closeStub(stub);
});

describe('the gateway against a recording vendor_a stub', () => {
  it('sends the vendor headers, no gateway fields, and aborts upstream when the client goes', async () => {
    const stream = new Anthropic({
      baseURL: gateway.url,
      apiKey: org.api_key,
      maxRetries: 0,
      defaultHeaders: { 'vendor-version': '2024-01-01' },
    }).messages.stream({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'go' }],
      metadata: { user_id: 'stub-user', external_user_id: 'stub-ext' } as Anthropic.Metadata,
    });
    const requestId = (await stream.withResponse()).response.headers.get('x-request-id');
    let deltas = 0;
    try {
      for await (const streamed of stream) {
        if (streamed.type === 'content_block_delta') deltas += 1;
        if (deltas === 3) stream.abort();
      }
    } catch (error) {
      expect(error).toBeInstanceOf(Anthropic.APIUserAbortError);
    }
    expect(await upstreamClosedEarly).toBe(true);
    expect(seen?.headers['x-api-key']).toBe(STUB_KEY);
    expect(seen?.headers['anthropic-version']).toBe('2024-01-01');
    expect(seen?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen)).not.toContain(org.api_key);
    expect(seen?.body).toMatchObject({ model: 'claude-haiku-4-5', stream: true });
    expect(seen?.body.metadata).toEqual({ user_id: 'stub-user' });
    const row = await ledgerRow<{ status: string; input_tokens: number }>(
      db,
      requestId,
      'status, input_tokens',
    );
    // The input tokens message_start reported are billed, not the estimate.
    expect(row).toEqual({ status: 'client_aborted', input_tokens: 9 });
  });

  it('settles and ends a stream at message_stop while the vendor keeps its body open', async () => {
    lingerEndedByVendor = false;
    const answer = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.api_key },
      body: JSON.stringify({
        model: MODEL,
        max_tokens: LINGER_MAX_TOKENS,
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      }),
    });
    expect(answer.status).toBe(200);
    const text = await answer.text(); // resolves when the gateway ends the response
    // ended by the gateway while the vendor's body was still open, not when the vendor closed it
    expect(lingerEndedByVendor).toBe(false);
    expect(text.trimEnd().endsWith(`data: ${JSON.stringify({ type: 'message_stop' })}`)).toBe(true);
    // Settled before message_stop reached the client; the writer lands the row within its
    // flush. The vendor's reported tokens are billed.
    const row = await ledgerRow<{ status: string; input_tokens: number; output_tokens: number }>(
      db,
      answer.headers.get('x-request-id'),
      'status, input_tokens, output_tokens',
    );
    expect(row).toEqual({ status: 'completed', input_tokens: 9, output_tokens: 4 });
  });

  it('translates a chat request: default version, no attribution or unknown fields upstream', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: org.api_key, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: MODEL,
      max_completion_tokens: 30,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
      user: 'stub-chat-user',
      stop: ['END'],
      seed: 3,
      response_format: { type: 'json_object' },
      temperature: 0.5,
      stream_options: null,
      metadata: { external_user_id: 'stub-chat-ext' },
    });
    expect(completion.choices[0]).toMatchObject({
      message: { role: 'assistant', content: 'fine' },
      finish_reason: 'stop',
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2 });
    expect(seen?.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen?.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 30,
      system: 'Be brief.',
      temperature: 0.5,
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
  });
});
