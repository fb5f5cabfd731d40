// vendor_a reports a prompt in three parts: `input_tokens` (after the last cache breakpoint),
// `cache_creation_input_tokens` (written to its prompt cache) and `cache_read_input_tokens`
// (read from it), and bills all three. A client that marks its prompt with `cache_control`
// (which /v1/messages passes through) moves nearly all of it out of `input_tokens`: the
// request must still be charged for every prompt token the vendor reported, or caps,
// allowances and the wallet are bypassed while the system route's vendor account pays.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { messagesEvent } from './support/messages-events.js';

const { env, db } = isolatedContext('vendor-cache-usage');
let org: SeededOrg;
let gateway: GatewayProcess;
const MODEL = 'vendor_a/claude-haiku-4-5';

const UNCACHED = 3;
const CACHE_WRITTEN = 5000;
const CACHE_READ = 4000;
const OUTPUT = 2;

/** vendor_a as it answers a prompt with a cache breakpoint: most of it cached. */
const stub = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    const usage = {
      input_tokens: UNCACHED,
      cache_creation_input_tokens: CACHE_WRITTEN,
      cache_read_input_tokens: CACHE_READ,
    };
    const message = {
      id: 'msg_cache',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [] as unknown[],
      stop_reason: null as string | null,
      stop_sequence: null,
    };
    if (body.stream !== true) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          ...message,
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          usage: { ...usage, output_tokens: OUTPUT },
        }),
      );
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(
      messagesEvent('message_start', {
        message: { ...message, usage: { ...usage, output_tokens: 1 } },
      }) +
        messagesEvent('content_block_start', {
          index: 0,
          content_block: { type: 'text', text: '' },
        }) +
        messagesEvent('content_block_delta', {
          index: 0,
          delta: { type: 'text_delta', text: 'ok' },
        }) +
        messagesEvent('content_block_stop', { index: 0 }) +
        messagesEvent('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: OUTPUT },
        }) +
        messagesEvent('message_stop', {}),
    );
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  const { port } = stub.address() as AddressInfo;
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway({
      ...env,
      VENDOR_A_BASE_URL: `http://127.0.0.1:${port}`,
      VENDOR_A_API_KEY: 'stub-vendor-key-0123456789abcdef',
    }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  stub.closeAllConnections();
  await new Promise((resolve) => stub.close(resolve));
});

const PROMPT_TOKENS = UNCACHED + CACHE_WRITTEN + CACHE_READ;
// claude-haiku-4-5 sells input at 0.000001 and output at 0.000005 per token.
const SELL_COST = ((PROMPT_TOKENS * 1 + OUTPUT * 5) / 1e6).toFixed(12);

async function ask(path: string, body: Record<string, unknown>): Promise<string | null> {
  const answer = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': org.api_key },
    body: JSON.stringify(body),
  });
  expect(answer.status).toBe(200);
  await answer.text();
  return answer.headers.get('x-request-id');
}

const cachedPrompt = {
  model: MODEL,
  max_tokens: 100,
  system: [{ type: 'text', text: 'a long system prompt', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: 'hi' }],
};

describe('a prompt the vendor served partly from its cache', () => {
  for (const stream of [false, true]) {
    it(`charges every prompt token the vendor reported (${stream ? 'stream' : 'JSON'})`, async () => {
      const requestId = await ask('/v1/messages', { ...cachedPrompt, stream });
      const row = await ledgerRow<{ input_tokens: number; sell_cost: string }>(
        db,
        requestId,
        'input_tokens, sell_cost::text',
      );
      expect(row).toEqual({ input_tokens: PROMPT_TOKENS, sell_cost: SELL_COST });
    });
  }

  it('charges them on the chat route too, and reports them as prompt tokens', async () => {
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.api_key}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(answer.status).toBe(200);
    const completion = (await answer.json()) as { usage: { prompt_tokens: number } };
    expect(completion.usage.prompt_tokens).toBe(PROMPT_TOKENS);
    const row = await ledgerRow<{ input_tokens: number }>(
      db,
      answer.headers.get('x-request-id'),
      'input_tokens',
    );
    expect(row.input_tokens).toBe(PROMPT_TOKENS);
  });
});
