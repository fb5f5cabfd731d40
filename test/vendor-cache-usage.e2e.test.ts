// vendor_a reports a prompt in three parts: `input_tokens` (after the last cache breakpoint),
// `cache_creation_input_tokens` (written to its prompt cache) and `cache_read_input_tokens`
// (read from it), and bills all three. A client that marks its prompt with `cache_control`
// (which /v1/messages passes through) moves nearly all of it out of `input_tokens`: the
// request must still be charged for every prompt token the vendor reported, or caps,
// allowances and the wallet are bypassed while the system route's vendor account pays.
// Each part is priced at its own rate (decision 324): vendor_a writes its cache at 1.25× the
// input rate and reads it at 0.1×; vendor_b's cache is automatic and reads at 0.5×.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';
import {
  answerJson,
  answerMessagesText,
  closeStub,
  listenLocally,
  openEventStream,
  stubVendor,
} from './support/stub-vendor.js';

const { env, db } = isolatedContext('vendor-cache-usage');
let org: SeededOrg;
let gateway: GatewayProcess;
const MODEL = 'vendor_a/claude-haiku-4-5';
const CHAT_MODEL = 'vendor_b/gpt-4o-mini';

const UNCACHED = 3;
const CACHE_WRITTEN = 5000;
/** Of the writes, those kept for an hour (`cache_control.ttl: "1h"`). */
const CACHE_WRITTEN_1H = 2000;
const CACHE_READ = 4000;
const OUTPUT = 2;
/** A prompt the stub answers with a cache part it cannot be read from. */
const MALFORMED_ASK = 'answer with malformed counts';

/** vendor_a as it answers a prompt with a cache breakpoint: most of it cached. */
const stub = stubVendor((body, response) => {
  const malformed = JSON.stringify(body.messages).includes(MALFORMED_ASK);
  const usage = {
    input_tokens: UNCACHED,
    cache_creation_input_tokens: CACHE_WRITTEN,
    // A vendor that names a part it cannot be read from (decision 328).
    cache_read_input_tokens: malformed ? String(CACHE_READ) : CACHE_READ,
    cache_creation: {
      ephemeral_5m_input_tokens: CACHE_WRITTEN - CACHE_WRITTEN_1H,
      ephemeral_1h_input_tokens: CACHE_WRITTEN_1H,
    },
  };
  answerMessagesText(body, response, {
    id: 'msg_cache',
    model: 'claude-haiku-4-5',
    text: 'ok',
    usage: { ...usage, output_tokens: OUTPUT },
    startUsage: { ...usage, output_tokens: 1 },
    finalUsage: { output_tokens: OUTPUT },
  });
});

const CHAT_PROMPT = 1000;
const CHAT_CACHED = 800;
const CHAT_OUTPUT = 10;

/** vendor_b as it answers a prompt whose start it served from its (automatic) cache. */
const chatStub = stubVendor((body, response) => {
  const usage = {
    prompt_tokens: CHAT_PROMPT,
    completion_tokens: CHAT_OUTPUT,
    total_tokens: CHAT_PROMPT + CHAT_OUTPUT,
    prompt_tokens_details: { cached_tokens: CHAT_CACHED },
  };
  const base = { id: 'chatcmpl-cache', created: 1, model: 'gpt-4o-mini' };
  if (body.stream !== true) {
    answerJson(response, {
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage,
    });
    return;
  }
  const chunk = (fields: Record<string, unknown>) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...fields })}\n\n`;
  openEventStream(response);
  response.end(
    chunk({
      choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: null }],
      usage: null,
    }) +
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }) +
      chunk({ choices: [], usage }) +
      'data: [DONE]\n\n',
  );
});

beforeAll(async () => {
  const [vendorA, vendorB] = await Promise.all([listenLocally(stub), listenLocally(chatStub)]);
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway({
      ...env,
      VENDOR_A_BASE_URL: vendorA,
      VENDOR_A_API_KEY: 'stub-vendor-key-0123456789abcdef',
      VENDOR_B_BASE_URL: vendorB,
      VENDOR_B_API_KEY: 'stub-vendor-key-0123456789abcdef',
    }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([stub, chatStub].map(closeStub));
});

const PROMPT_TOKENS = UNCACHED + CACHE_WRITTEN + CACHE_READ;
// claude-haiku-4-5 sells (and costs) per million tokens: input 1, cache writes 1.25 (2 for an
// hour), cache reads 0.1, output 5.
const SELL_COST = (
  (UNCACHED * 1 +
    (CACHE_WRITTEN - CACHE_WRITTEN_1H) * 1.25 +
    CACHE_WRITTEN_1H * 2 +
    CACHE_READ * 0.1 +
    OUTPUT * 5) /
  1e6
).toFixed(12);

interface PricedRow {
  input_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  sell_cost: string;
  vendor_cost: string;
}
const PRICED_COLUMNS =
  'input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, sell_cost::text, vendor_cost::text';

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
    it(`charges every prompt token the vendor reported, each part at its rate (${stream ? 'stream' : 'JSON'})`, async () => {
      const requestId = await ask('/v1/messages', { ...cachedPrompt, stream });
      const row = await ledgerRow<PricedRow>(db, requestId, PRICED_COLUMNS);
      expect(row).toEqual({
        input_tokens: PROMPT_TOKENS,
        cache_write_tokens: CACHE_WRITTEN,
        cache_write_1h_tokens: CACHE_WRITTEN_1H,
        cache_read_tokens: CACHE_READ,
        sell_cost: SELL_COST,
        vendor_cost: SELL_COST,
      });
    });
  }

  for (const stream of [false, true]) {
    it(`charges a usage naming an unreadable cache part as unreported (${stream ? 'stream' : 'JSON'})`, async () => {
      const requestId = await ask('/v1/messages', {
        ...cachedPrompt,
        messages: [{ role: 'user', content: MALFORMED_ASK }],
        stream,
      });
      const row = await ledgerRow<PricedRow & { end_reason: string; output_tokens: number }>(
        db,
        requestId,
        `${PRICED_COLUMNS}, end_reason, output_tokens`,
      );
      // The estimate billed as the hold priced it (a cache write), not 4000 reads read as 0.
      expect(row).toMatchObject({
        end_reason: 'completed_without_usage',
        cache_read_tokens: 0,
        // JSON: the whole held output; a stream: the counted text ("ok").
        output_tokens: stream ? 1 : cachedPrompt.max_tokens,
      });
      expect(row.input_tokens).toBeGreaterThan(0);
      expect(row.cache_write_tokens).toBe(row.input_tokens);
    });
  }

  it('charges them on the chat route too, and reports them as prompt tokens with the cached ones', async () => {
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.api_key}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(answer.status).toBe(200);
    const completion = (await answer.json()) as {
      usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    };
    expect(completion.usage.prompt_tokens).toBe(PROMPT_TOKENS);
    expect(completion.usage.prompt_tokens_details).toEqual({ cached_tokens: CACHE_READ });
    const row = await ledgerRow<PricedRow>(db, answer.headers.get('x-request-id'), PRICED_COLUMNS);
    expect(row).toMatchObject({ input_tokens: PROMPT_TOKENS, sell_cost: SELL_COST });
  });
});

describe('the hold of a prompt that asks for a cache write', () => {
  it("prices the prompt at the cache-write rate (an hour's when asked), and a prompt without one at the input rate", async () => {
    const heldFor = async (body: Record<string, unknown>): Promise<number> => {
      const requestId = await ask('/v1/messages', body);
      const row = await ledgerRow<{ reserved: string }>(
        db,
        requestId,
        'reserved_amount::text AS reserved',
      );
      // The output held: max_tokens (100) at 0.000005.
      return Math.round((Number(row.reserved) - 100 * 0.000005) * 1e9);
    };
    const plain = await heldFor({
      ...cachedPrompt,
      system: [{ type: 'text', text: 'a long system prompt' }],
    });
    const cached = await heldFor(cachedPrompt);
    const cachedForAnHour = await heldFor({
      ...cachedPrompt,
      system: [
        {
          type: 'text',
          text: 'a long system prompt',
          cache_control: { type: 'ephemeral', ttl: '1h' },
        },
      ],
    });
    expect(plain).toBeGreaterThan(0);
    expect(cached).toBe(plain * 1.25);
    expect(cachedForAnHour).toBe(plain * 2);
  });
});

describe('a chat prompt the vendor served partly from its automatic cache', () => {
  // gpt-4o-mini sells (and costs) per million tokens: input 0.15, cache reads 0.075, output 0.6.
  const chatCost = (
    ((CHAT_PROMPT - CHAT_CACHED) * 0.15 + CHAT_CACHED * 0.075 + CHAT_OUTPUT * 0.6) /
    1e6
  ).toFixed(12);

  for (const stream of [false, true]) {
    it(`charges the cached part at the cache-read rate (${stream ? 'stream' : 'JSON'})`, async () => {
      const requestId = await ask('/v1/chat/completions', {
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        stream,
      });
      const row = await ledgerRow<PricedRow>(db, requestId, PRICED_COLUMNS);
      expect(row).toEqual({
        input_tokens: CHAT_PROMPT,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        cache_read_tokens: CHAT_CACHED,
        sell_cost: chatCost,
        vendor_cost: chatCost,
      });
    });
  }
});
