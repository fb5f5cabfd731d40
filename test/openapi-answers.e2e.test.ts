// What a client generated from /openapi.json expects, held against what a running gateway
// answers: for the routes an integrating app calls (inference, models, key usage, the
// service-key product-user routes), each success and error answer matches the schema the
// document gives its route and status (test/support/openapi-check.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, type JsonResponse } from './support/http.js';
import { responseSchema, schemaProblems } from './support/openapi-check.js';
import {
  createApiKey,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';

const { env } = isolatedContext('openapi-answers');
let gateway: GatewayProcess;
let org: SeededOrg;
let document: unknown;

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
  document = (await getJson(`${gateway.url}/openapi.json`)).body;
});

afterAll(async () => {
  await gateway?.stop();
});

async function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<JsonResponse> {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** Sends one request and holds its answer against the document's schema for its status. */
async function expectDocumented(
  operation: { method: string; documentedPath: string },
  expectedStatus: number,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<JsonResponse> {
  const answer = await send(operation.method, path, headers, body);
  const label = `${operation.method} ${path} ${JSON.stringify(answer.body).slice(0, 300)}`;
  expect(answer.status, label).toBe(expectedStatus);
  const schema = responseSchema(
    document,
    operation.documentedPath,
    operation.method.toLowerCase(),
    expectedStatus,
  );
  expect(schemaProblems(document, schema, answer.body), label).toEqual([]);
  return answer;
}

const chat = { method: 'POST', documentedPath: '/v1/chat/completions' };
const messages = { method: 'POST', documentedPath: '/v1/messages' };
const vendorVersion = { 'vendor-version': '2023-06-01' };

describe('inference routes: error answers match the document', () => {
  it('chat completions: 400, 401, 403, 404 and 429 in the standard shape', async () => {
    const hello = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    const path = '/v1/chat/completions';
    await expectDocumented(chat, 401, path, {}, hello);
    await expectDocumented(chat, 401, path, bearer(`gw_${'Z'.repeat(43)}`), hello);
    await expectDocumented(chat, 400, path, bearer(org.api_key), { ...hello, messages: [] });
    await expectDocumented(chat, 404, path, bearer(org.api_key), {
      ...hello,
      model: 'vendor_b/nope',
    });
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_a/*');
    await expectDocumented(chat, 403, path, bearer(narrow.key), hello);
    const limited = await runCliJson<{ key: string }>(
      [
        'api-key',
        'create',
        '--app-connection-id',
        org.app_connection_id,
        '--requests-per-minute',
        '1',
      ],
      env,
    );
    // The first passes; the second is over the limit.
    await expectDocumented(chat, 200, path, bearer(limited.key), hello);
    const refused = await expectDocumented(chat, 429, path, bearer(limited.key), hello);
    expect((refused.body as { error: { code: string } }).error.code).toBe('gw_rate_limited');
  });

  it("messages: errors in the protocol's shape, with type and error.type", async () => {
    const path = '/v1/messages';
    const hello = {
      model: 'vendor_a/claude-haiku-4-5',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'hi' }],
    };
    const unknown = await expectDocumented(
      messages,
      401,
      path,
      { 'x-api-key': `gw_${'Z'.repeat(43)}`, ...vendorVersion },
      hello,
    );
    expect(unknown.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const { max_tokens: _omitted, ...withoutMaxTokens } = hello;
    await expectDocumented(
      messages,
      400,
      path,
      { 'x-api-key': org.api_key, ...vendorVersion },
      withoutMaxTokens,
    );
  });
});

/** Sends a streaming request; its body as text, held against the document's event stream. */
async function expectDocumentedStream(
  operation: { method: string; documentedPath: string },
  headers: Record<string, string>,
  body: unknown,
): Promise<string> {
  const response = await fetch(`${gateway.url}${operation.documentedPath}`, {
    method: operation.method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const schema = responseSchema(
    document,
    operation.documentedPath,
    operation.method.toLowerCase(),
    200,
    'text/event-stream',
  );
  expect(schema).toMatchObject({ type: 'string' });
  expect(schema.description).toEqual(expect.any(String));
  expect(schemaProblems(document, schema, text)).toEqual([]);
  return text;
}

describe('inference routes: 200 answers match the document', () => {
  const weather = {
    name: 'get_weather',
    description: 'the weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  const ask = [{ role: 'user', content: 'weather in Oslo?' }];

  it('chat completions: a chat.completion, with text or tool calls, native or translated', async () => {
    const path = '/v1/chat/completions';
    const key = bearer(org.api_key);
    for (const model of ['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5']) {
      const text = await expectDocumented(chat, 200, path, key, { model, messages: ask });
      expect(text.body).toMatchObject({
        object: 'chat.completion',
        choices: [{ message: { role: 'assistant', content: expect.any(String) } }],
      });
      const tools = await expectDocumented(chat, 200, path, key, {
        model,
        messages: ask,
        tools: [{ type: 'function', function: weather }],
      });
      expect(tools.body).toMatchObject({
        choices: [
          {
            finish_reason: 'tool_calls',
            message: { tool_calls: [{ type: 'function', function: { name: 'get_weather' } }] },
          },
        ],
      });
    }
  });

  it('documents the flat profile fields with the limits the gateway applies, on both protocols', async () => {
    const paths = (
      document as {
        paths: Record<string, { post: { requestBody: { content: Record<string, unknown> } } }>;
      }
    ).paths;
    const routes = [
      {
        path: '/v1/chat/completions',
        send: chat,
        headers: bearer(org.api_key),
        who: { model: 'vendor_b/gpt-4o-mini', messages: ask, user: 'openapi-flat' },
      },
      {
        path: '/v1/messages',
        send: messages,
        headers: { 'x-api-key': org.api_key, ...vendorVersion },
        who: {
          model: 'vendor_a/claude-haiku-4-5',
          max_tokens: 20,
          messages: ask,
          metadata: { external_user_id: 'openapi-flat-messages' },
        },
      },
    ];
    for (const { path, send, headers, who } of routes) {
      const request = paths[path]!.post.requestBody.content['application/json'] as {
        schema: { properties: Record<string, Record<string, unknown>> };
      };
      const { properties } = request.schema;
      expect(properties.product_user_display_name).toMatchObject({
        type: 'string',
        maxLength: 256,
      });
      expect(properties.product_user_email).toMatchObject({ type: 'string' });
      expect(properties.product_user_metadata).toMatchObject({ type: 'object' });
      expect(String(properties.product_user_metadata!.description)).toContain('8192 bytes');
      expect(String(properties.metadata!.description)).toContain('external_user_id');
      await expectDocumented(send, 200, path, headers, {
        ...who,
        product_user_display_name: 'n'.repeat(256),
        product_user_email: `  ${'m'.repeat(300)}@example.com  `,
        product_user_metadata: { plan: 'pro' },
      });
      const long = await expectDocumented(send, 400, path, headers, {
        ...who,
        product_user_display_name: 'n'.repeat(257),
      });
      expect(long.body).toMatchObject({
        error: { message: 'product_user_display_name: must be at most 256 characters' },
      });
    }
  });

  it('messages: a message, with text or a tool_use block', async () => {
    const headers = { 'x-api-key': org.api_key, ...vendorVersion };
    const hello = { model: 'vendor_a/claude-haiku-4-5', max_tokens: 20, messages: ask };
    const text = await expectDocumented(messages, 200, '/v1/messages', headers, hello);
    expect(text.body).toMatchObject({ type: 'message', content: [{ type: 'text' }] });
    const tools = await expectDocumented(messages, 200, '/v1/messages', headers, {
      ...hello,
      tools: [
        { name: weather.name, description: weather.description, input_schema: weather.parameters },
      ],
    });
    expect(tools.body).toMatchObject({
      stop_reason: 'tool_use',
      content: expect.arrayContaining([expect.objectContaining({ type: 'tool_use' })]),
    });
  });

  it('streams: text/event-stream, ending as the document says', async () => {
    const key = bearer(org.api_key);
    for (const model of ['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5']) {
      const events = await expectDocumentedStream(chat, key, {
        model,
        messages: ask,
        stream: true,
        stream_options: { include_usage: true },
      });
      expect(events).toContain('"object":"chat.completion.chunk"');
      expect(events.endsWith('data: [DONE]\n\n')).toBe(true);
    }
    const events = await expectDocumentedStream(
      messages,
      { 'x-api-key': org.api_key, ...vendorVersion },
      { model: 'vendor_a/claude-haiku-4-5', max_tokens: 20, messages: ask, stream: true },
    );
    expect(events).toContain('event: message_start');
    expect(events).toMatch(/event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/);
  });
});

describe('models, key usage and token counts: answers match the document', () => {
  it('lists and retrieves models in both formats; an unknown model is 404', async () => {
    const list = { method: 'GET', documentedPath: '/v1/models' };
    const one = { method: 'GET', documentedPath: '/v1/models/{model_id}' };
    for (const headers of [bearer(org.api_key), { ...bearer(org.api_key), ...vendorVersion }]) {
      const listed = await expectDocumented(list, 200, '/v1/models', headers);
      expect((listed.body as { data: unknown[] }).data.length).toBeGreaterThan(0);
      await expectDocumented(one, 200, '/v1/models/vendor_b%2Fgpt-4o-mini', headers);
      await expectDocumented(one, 404, '/v1/models/vendor_b%2Fnope', headers);
    }
  });

  it('counts tokens and reports the key usage', async () => {
    await expectDocumented(
      { method: 'POST', documentedPath: '/v1/messages/count_tokens' },
      200,
      '/v1/messages/count_tokens',
      { 'x-api-key': org.api_key, ...vendorVersion },
      { model: 'vendor_a/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] },
    );
    await expectDocumented(
      { method: 'GET', documentedPath: '/inference-keys/usage' },
      200,
      '/inference-keys/usage',
      bearer(org.api_key),
    );
  });
});

describe('service-key product-user routes: answers match the document', () => {
  const base = '/product-users/by-external-id';
  const profile = { method: 'GET', documentedPath: base };
  const upsert = { method: 'PUT', documentedPath: base };
  const grants = { method: 'POST', documentedPath: `${base}/credit-grants` };

  it('creates, updates and reads a profile; unknown users, missing ids and keys are refused', async () => {
    const key = bearer(org.service_key);
    const who = { app_id: org.app_id, external_user_id: 'openapi-user' };
    await expectDocumented(upsert, 201, base, key, { ...who, display_name: 'Ada' });
    await expectDocumented(upsert, 200, base, key, { ...who, email: 'ada@example.com' });
    const query = `app_id=${org.app_id}&external_user_id=openapi-user`;
    await expectDocumented(profile, 200, `${base}?${query}`, key);
    await expectDocumented(
      { method: 'GET', documentedPath: `${base}/credit-summary` },
      200,
      `${base}/credit-summary?${query}`,
      key,
    );
    await expectDocumented(profile, 404, `${base}?app_id=${org.app_id}&external_user_id=x`, key);
    await expectDocumented(profile, 400, `${base}?external_user_id=x`, key);
    await expectDocumented(profile, 401, `${base}?${query}`, {});
  });

  it('grants credits (201), replays a grant (200) and refuses a reused key with another body (409)', async () => {
    const key = bearer(org.service_key);
    const who = { app_id: org.app_id, external_user_id: 'openapi-granted' };
    await expectDocumented(upsert, 201, base, key, who);
    const idempotency = { ...key, 'idempotency-key': `openapi-${org.org_id}` };
    const path = `${base}/credit-grants`;
    const first = await expectDocumented(grants, 201, path, idempotency, {
      ...who,
      amount: '0.50',
    });
    const replay = await expectDocumented(grants, 200, path, idempotency, {
      ...who,
      amount: '0.50',
    });
    expect(replay.body).toEqual(first.body);
    expect(first.body).toMatchObject({
      amount: '0.500000000000',
      currency: 'USD',
      status: 'active',
      credits: { available_credits: '0.500000000000', active_grant_count: 1 },
    });
    await expectDocumented(grants, 409, path, idempotency, { ...who, amount: '0.75' });
  });
});
