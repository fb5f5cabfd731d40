// The hot path end to end: a real gateway process, real Redis and Postgres, the built-in
// mock vendor. Every completed request has its usage row and its exact cost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts } from '../src/tokens/request-texts.js';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, postJson, postSse, type ErrorBody } from './support/http.js';
import {
  createApiKey,
  runCliJson,
  seed,
  metricsUrl,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('chat');
let gateway: GatewayProcess;
let org: SeededOrg;

// vendor_b/gpt-4o-mini sells at $0.15 / M input and $0.60 / M output tokens.
const INPUT_NANO_PER_TOKEN = 150n; // 0.00000015 × 1e9
const OUTPUT_NANO_PER_TOKEN = 600n;

interface UsageRow {
  request_id: string;
  org_id: string;
  product_user_id: string | null;
  model: string;
  stream: boolean;
  status: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  sell_cost: string;
  wallet_cost: string;
}

function usageRow(requestId: string): Promise<UsageRow> {
  return ledgerRow<UsageRow>(
    db,
    requestId,
    `request_id, org_id, product_user_id, model, stream, status, input_tokens, output_tokens,
     total_tokens, sell_cost::text, wallet_cost::text`,
    15_000, // returns as soon as the writer has written it
  );
}

const formatNanoForTest = (nano: bigint): string =>
  `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}000`;

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('POST /v1/chat/completions (vendor_b, non-streaming)', () => {
  it('answers in the chat-completions format and records exact usage and cost', async () => {
    const body = {
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hello to the gateway. mock:output_tokens=5' }],
    };
    const before = await runCliJson<{ balance: string }>(
      ['wallet', 'show', '--org-id', org.org_id],
      env,
    );
    const response = await postJson<{
      object: string;
      choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    }>(`${gateway.url}/v1/chat/completions`, body, {
      ...bearer(org.api_key),
      'x-gw-external-user-id': 'user-nonstream',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.body.object).toBe('chat.completion');
    expect(response.body.choices[0]!.message.role).toBe('assistant');
    expect(typeof response.body.choices[0]!.message.content).toBe('string');
    expect(response.body.usage.completion_tokens).toBe(5);
    expect(response.body.usage.prompt_tokens).toBe(countInputTokens(chatCompletionTexts(body)));
    const requestId = response.headers.get('x-request-id')!;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    const row = await usageRow(requestId);
    const expectedNano =
      BigInt(response.body.usage.prompt_tokens) * INPUT_NANO_PER_TOKEN + 5n * OUTPUT_NANO_PER_TOKEN;
    expect(row).toMatchObject({
      org_id: org.org_id,
      model: 'vendor_b/gpt-4o-mini',
      stream: false,
      status: 'completed',
      input_tokens: response.body.usage.prompt_tokens,
      output_tokens: 5,
      total_tokens: response.body.usage.total_tokens,
      sell_cost: formatNanoForTest(expectedNano),
      wallet_cost: formatNanoForTest(expectedNano),
    });
    expect(row.product_user_id).toMatch(/^pu_/);

    const after = await runCliJson<{ balance: string; reserved: string }>(
      ['wallet', 'show', '--org-id', org.org_id],
      env,
    );
    const toNano = (text: string): bigint => BigInt(text.replace('.', '').slice(0, -3));
    expect(toNano(before.balance) - toNano(after.balance)).toBe(expectedNano);
    expect(after.reserved).toBe('0.000000000000');
  });
});

describe('POST /v1/chat/completions (vendor_b, streaming)', () => {
  const streamBody = (extra: Record<string, unknown> = {}) => ({
    model: 'vendor_b/gpt-4o-mini',
    stream: true,
    messages: [{ role: 'user', content: 'Stream me four tokens. mock:output_tokens=4' }],
    ...extra,
  });

  it('streams SSE ending in [DONE], strips the usage chunk the client did not ask for, and records usage', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      streamBody(),
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    // the model's words are never read as a page or a script (decision 386)
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.data.at(-1)).toBe('[DONE]');
    const chunks = response.data
      .slice(0, -1)
      .map((data) => JSON.parse(data) as { choices: unknown[]; usage?: unknown });
    expect(chunks.every((chunk) => chunk.choices.length > 0)).toBe(true);
    const row = await usageRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ stream: true, status: 'completed', output_tokens: 4 });
    expect(row.product_user_id).toBeNull();
  });

  it('forwards the usage chunk when the client asks for it', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      streamBody({ stream_options: { include_usage: true } }),
      bearer(org.api_key),
    );
    expect(response.data.at(-1)).toBe('[DONE]');
    const usageChunk = JSON.parse(response.data.at(-2)!) as {
      choices: unknown[];
      usage: { completion_tokens: number; prompt_tokens: number };
    };
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage.completion_tokens).toBe(4);
    const row = await usageRow(response.headers.get('x-request-id')!);
    expect(row.input_tokens).toBe(usageChunk.usage.prompt_tokens);
  });

  it('ends a stream the vendor cut without [DONE] and settles what was produced', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        messages: [
          { role: 'user', content: 'Cut me off. mock:output_tokens=10 mock:fault=cut_stream' },
        ],
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.data).not.toContain('[DONE]');
    const row = await usageRow(response.headers.get('x-request-id')!);
    expect(row.status).toBe('incomplete');
    expect(row.output_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeLessThan(10);
  });
});

describe('request errors', () => {
  it('refuses a body over the limit with 413 in the spec shape', async () => {
    const small = await startGateway({ ...env, MAX_BODY_BYTES: '2048' });
    try {
      const response = await postJson<{ error: { code: string; message: string } }>(
        `${small.url}/v1/chat/completions`,
        { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(4096) }] },
        bearer(org.api_key),
      );
      expect(response.status).toBe(413);
      expect(response.body.error.code).toBe('gw_body_too_large');
      expect(typeof response.body.error.message).toBe('string');
      expect(response.headers.get('x-request-id')).toBeTruthy();
    } finally {
      await small.stop();
    }
  });

  it('answers 400 gw_invalid_json for a body that is not JSON', async () => {
    const response = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      '{"model": ',
      bearer(org.api_key),
    );
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('gw_invalid_json');
  });

  it('answers 400 gw_invalid_request naming the field', async () => {
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [] },
      bearer(org.api_key),
    );
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('gw_invalid_request');
    expect(response.body.error.message).toMatch(/^messages:/);
  });

  it('refuses message content the vendors refuse, naming the field, before anything is held or billed', async () => {
    const refused: Array<[string, unknown[]]> = [
      ['messages.0.content', [{ role: 'user', content: 5 }]],
      ['messages.0.content', [{ role: 'user' }]],
      ['messages.0.content', [{ role: 'user', content: null }]],
      ['messages.0.content', [{ role: 'system', content: { text: 'hi' } }]],
      ['messages.1.content', [{ role: 'user', content: 'hi' }, { role: 'assistant' }]],
      ['messages.0.content', [{ role: 'user', content: [{ text: 'no type' }] }]],
      [
        'messages.2.content',
        [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1' },
        ],
      ],
    ];
    const requestIds: string[] = [];
    for (const [field, messages] of refused) {
      const response = await postJson<{ error: { code: string; message: string } }>(
        `${gateway.url}/v1/chat/completions`,
        { model: 'vendor_b/gpt-4o-mini', messages },
        bearer(org.api_key),
      );
      expect([JSON.stringify(messages), response.status, response.body.error.code]).toEqual([
        JSON.stringify(messages),
        400,
        'gw_invalid_request',
      ]);
      expect(response.body.error.message.startsWith(`${field}: `)).toBe(true);
      requestIds.push(response.headers.get('x-request-id')!);
    }
    // Refused before admission: nothing held, no usage record for any of them.
    const { rows } = await db.query('SELECT 1 FROM usage_records WHERE request_id = ANY($1)', [
      requestIds,
    ]);
    expect(rows).toEqual([]);
  });

  it('accepts content parts, an assistant tool call without content, and fields it does not know', async () => {
    const response = await postJson<{ choices: unknown[] }>(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
          { role: 'user', content: 'weather?', name: 'ada', x_vendor_hint: { a: 1 } },
          {
            role: 'assistant',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        ],
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.body.choices).toHaveLength(1);
  });

  it('answers 404 gw_unsupported_model for a model it cannot route', async () => {
    const response = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/no-such-model', messages: [{ role: 'user', content: 'hi' }] },
      bearer(org.api_key),
    );
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('gw_unsupported_model');
  });

  it('names the model meant when the id lacks its vendor, on every route that takes a model (decision 468)', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const hint =
      'model gpt-4o-mini is not routable: model ids name their vendor, did you mean vendor_b/gpt-4o-mini? (see GET /v1/models)';
    const chat = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'gpt-4o-mini', messages },
      bearer(org.api_key),
    );
    expect(chat.status).toBe(404);
    expect(chat.body.error).toEqual({ code: 'gw_unsupported_model', message: hint });
    const count = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/messages/count_tokens`,
      { model: 'claude-haiku-4-5', messages },
      bearer(org.api_key),
    );
    expect(count.status).toBe(404);
    expect(count.body.error).toMatchObject({
      code: 'gw_unsupported_model',
      message:
        'model claude-haiku-4-5 is not routable: model ids name their vendor, did you mean vendor_a/claude-haiku-4-5? (see GET /v1/models)',
    });
    const one = await getJson<ErrorBody>(
      `${gateway.url}/v1/models/gpt-4o-mini`,
      bearer(org.api_key),
    );
    expect(one.status).toBe(404);
    expect(one.body.error.message).toBe(hint);
    // Nothing to suggest: the message is as before.
    const unknown = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'no-such-model', messages },
      bearer(org.api_key),
    );
    expect(unknown.body.error.message).toBe(
      'model no-such-model is not routable; see GET /v1/models',
    );
  });

  it('names only a model the key may use: one outside its policy is not told (decision 491)', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const plain = 'model gpt-4o-mini is not routable; see GET /v1/models';
    // A key for vendor_a's models: GET /v1/models does not list vendor_b/gpt-4o-mini to it.
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_a/*');
    const listed = await getJson<{ data: { id: string }[] }>(
      `${gateway.url}/v1/models`,
      bearer(narrow.key),
    );
    expect(listed.body.data.map((model) => model.id)).not.toContain('vendor_b/gpt-4o-mini');
    const chat = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'gpt-4o-mini', messages },
      bearer(narrow.key),
    );
    expect(chat.status).toBe(404);
    expect(chat.body.error).toEqual({ code: 'gw_unsupported_model', message: plain });
    const count = await postJson<ErrorBody>(
      `${gateway.url}/v1/messages/count_tokens`,
      { model: 'gpt-4o-mini', messages },
      bearer(narrow.key),
    );
    expect(count.status).toBe(404);
    expect(count.body.error.message).toBe(plain);
    const one = await getJson<ErrorBody>(
      `${gateway.url}/v1/models/gpt-4o-mini`,
      bearer(narrow.key),
    );
    expect(one.status).toBe(404);
    expect(one.body.error.message).toBe(plain);
    // The model it may use is still named.
    const own = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'claude-haiku-4-5', messages },
      bearer(narrow.key),
    );
    expect(own.body.error.message).toBe(
      'model claude-haiku-4-5 is not routable: model ids name their vendor, did you mean vendor_a/claude-haiku-4-5? (see GET /v1/models)',
    );
  });

  it('on /v1/messages names a chat-only model meant with the route that serves it; a long id is cut in the message', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const onMessages = await postJson<ErrorBody>(
      `${gateway.url}/v1/messages`,
      { model: 'gpt-4o-mini', max_tokens: 16, messages },
      { 'x-api-key': org.api_key, 'anthropic-version': '2023-06-01' },
    );
    expect(onMessages.status).toBe(404);
    expect(onMessages.body.error).toMatchObject({
      message:
        'model gpt-4o-mini is not routable: model ids name their vendor, did you mean vendor_b/gpt-4o-mini (served on /v1/chat/completions)? (see GET /v1/models)',
    });
    // a model the route serves is named as on the other routes
    const served = await postJson<ErrorBody>(
      `${gateway.url}/v1/messages`,
      { model: 'claude-haiku-4-5', max_tokens: 16, messages },
      { 'x-api-key': org.api_key, 'anthropic-version': '2023-06-01' },
    );
    expect(served.body.error).toMatchObject({
      message:
        'model claude-haiku-4-5 is not routable: model ids name their vendor, did you mean vendor_a/claude-haiku-4-5? (see GET /v1/models)',
    });
    // an id of 100,000 characters is not written back whole: its first 100, then an ellipsis
    const long = `vendor_b/${'x'.repeat(100_000)}`;
    const refused = await postJson<ErrorBody>(
      `${gateway.url}/v1/chat/completions`,
      { model: long, messages },
      bearer(org.api_key),
    );
    expect(refused.status).toBe(404);
    expect(refused.body.error.message).toBe(
      `model ${long.slice(0, 100)}… is not routable; see GET /v1/models`,
    );
  });

  it('answers 402 when the wallet cannot reserve, and changes nothing', async () => {
    const poor = await seed(env, ['--wallet', '0.000001']);
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 1000,
      },
      bearer(poor.api_key),
    );
    expect(response.status).toBe(402);
    expect(response.body.error.code).toBe('gw_reservation_insufficient_balance');
    // what the hold is and how to make it smaller (decision 489)
    expect(response.body.error.message).toMatch(
      /^the organization wallet cannot reserve \d+\.\d{12} USD for this request \(available 0\.000001000000 USD\): the hold is the input and the most output the request allows \(without max_tokens, the model’s whole maximum\); a smaller max_tokens holds less, or the organization adds funds to its wallet$/,
    );
    const wallet = await runCliJson<{ balance: string; reserved: string }>(
      ['wallet', 'show', '--org-id', poor.org_id],
      env,
    );
    expect(wallet).toMatchObject({ balance: '0.000001000000', reserved: '0.000000000000' });
    const { rows } = await db.query('SELECT 1 FROM usage_records WHERE org_id = $1', [poor.org_id]);
    expect(rows).toHaveLength(0);
  });

  it('answers 402 on an empty wallet saying it needs funds, not a smaller max_tokens (decision 582)', async () => {
    const empty = await seed(env, ['--wallet', '0']);
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 },
      bearer(empty.api_key),
    );
    expect(response.status).toBe(402);
    expect(response.body.error.code).toBe('gw_reservation_insufficient_balance');
    expect(response.body.error.message).toMatch(
      /^the organization wallet cannot reserve \d+\.\d{12} USD for this request \(available 0\.000000000000 USD\): nothing in it is left to hold \(its balance is spent, or held by requests in flight\) until the organization adds funds to its wallet$/,
    );
  });

  it('answers unknown routes with 404 in the spec shape and a request id', async () => {
    const response = await fetch(`${gateway.url}/v2/nothing`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
      'gw_route_not_found',
    );
    expect(response.headers.get('x-request-id')).toBeTruthy();
  });

  it('names the route meant when a path has a prefix too many or lacks /v1 (decision 469)', async () => {
    for (const [method, path, meant] of [
      ['GET', '/api/v1/product-users/by-external-id', '/product-users/by-external-id'],
      ['PUT', '/v1/product-users/by-external-id', '/product-users/by-external-id'],
      ['POST', '/chat/completions', '/v1/chat/completions'],
      ['POST', '/api/v1/chat/completions', '/v1/chat/completions'],
      ['GET', '/api/v1/models', '/v1/models'],
      ['GET', '/', '/dashboard'],
    ] as const) {
      const response = await fetch(`${gateway.url}${path}`, { method });
      expect(response.status, path).toBe(404);
      expect(await response.json()).toEqual({
        error: {
          code: 'gw_route_not_found',
          message: `no route for ${method} ${path}; did you mean ${method} ${meant}?`,
        },
      });
    }
    // Nothing near: as before.
    const nothing = await fetch(`${gateway.url}/api/v1/nothing`);
    expect(((await nothing.json()) as ErrorBody).error.message).toBe(
      'no route for GET /api/v1/nothing',
    );
  });

  it('counts requests and written usage rows in /metrics', async () => {
    const text = await eventually(async () => {
      const body = await (await fetch(metricsUrl(gateway))).text();
      return /gw_usage_rows_written_total \d+/.test(body) &&
        !/gw_usage_rows_written_total 0\b/.test(body)
        ? body
        : undefined;
    });
    expect(text).toMatch(
      /gw_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} [1-9]\d*/,
    );
    expect(text).toMatch(
      /gw_http_requests_total\{route="\/v1\/chat\/completions",status="402"\} [1-9]\d*/,
    );
    expect(text).toContain('gw_http_request_duration_seconds_bucket');
    expect(text).toMatch(/^gw_usage_records_pending \d+$/m);
    expect(text).toContain('process_cpu_seconds_total');
  });

  it('serves /openapi.json', async () => {
    const response = await fetch(`${gateway.url}/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(document.paths['/v1/chat/completions']).toBeDefined();
  });

  it('serves /healthz and /readyz', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ready',
      checks: { redis: true, postgres: true },
    });
  });
});
