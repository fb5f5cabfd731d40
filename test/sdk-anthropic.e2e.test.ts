// The official `@anthropic-ai/sdk` client pointed at the gateway: messages create, stream and
// tool use on a vendor_a model, countTokens, models list, error classes, and a client that
// walks away mid-stream (upstream aborted, partial usage settled, no hold left behind).
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOCK_SYSTEM_KEY } from '../src/providers/system-routes.js';
import { countInputTokens } from '../src/tokens/count.js';
import { messagesTexts } from '../src/tokens/request-texts.js';
import { isolatedContext } from './support/context.js';
import { bearer, getJson } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
  createApiKey,
  revokeApiKey,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('anthropic');
let gateway: GatewayProcess;
let org: SeededOrg;
let client: Anthropic;
const MODEL = 'vendor_a/claude-haiku-4-5';

function clientFor(url: string, apiKey: string): Anthropic {
  return new Anthropic({
    baseURL: url,
    apiKey,
    maxRetries: 0,
    defaultHeaders: { 'vendor-version': '2023-06-01' },
  });
}

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
  client = clientFor(gateway.url, org.api_key);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('anthropic client on the messages routes', () => {
  it('creates a message; the estimate is never below the reported input tokens', async () => {
    const params = {
      model: MODEL,
      max_tokens: 20,
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'Hello there. mock:output_tokens=7' }],
    };
    const message = await client.messages.create(params);
    expect(message.type).toBe('message');
    expect(message.content[0]).toMatchObject({ type: 'text' });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(7);
    expect(countInputTokens(messagesTexts(params))).toBeGreaterThanOrEqual(
      message.usage.input_tokens,
    );
  });

  it('streams the vendor event sequence untouched, ending with message_stop', async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Stream. mock:output_tokens=4' }],
    });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types).toContain('content_block_delta');
    expect(final.usage.output_tokens).toBe(4);
  });

  it('passes tool use blocks through', async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Weather in Rome?' }],
      tools: [
        {
          name: 'get_weather',
          description: 'weather',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
    });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content[0]).toMatchObject({
      type: 'tool_use',
      name: 'get_weather',
      input: { city: 'mock' },
    });
  });

  it('streams tool use and completes the tool loop with a tool_result', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'weather',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Rome?' }];
    const stream = client.messages.stream({ model: MODEL, max_tokens: 200, messages, tools });
    const deltaTypes = new Set<string>();
    for await (const event of stream) {
      if (event.type === 'content_block_delta') deltaTypes.add(event.delta.type);
    }
    const first = await stream.finalMessage();
    expect(deltaTypes).toContain('input_json_delta');
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('expected a tool_use block');
    expect(use.input).toEqual({ city: 'mock' });
    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 C' }] },
    );
    const second = await client.messages.create({ model: MODEL, max_tokens: 20, messages, tools });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content[0]).toMatchObject({ type: 'text' });
  });

  it('attributes to the product user from the header, metadata.external_user_id or metadata.user_id', async () => {
    const ask = (metadata: Record<string, unknown>, headers: Record<string, string> = {}) =>
      client.messages
        .create(
          {
            model: MODEL,
            max_tokens: 5,
            messages: [{ role: 'user', content: 'hi mock:output_tokens=2' }],
            metadata,
          } as Anthropic.MessageCreateParamsNonStreaming,
          { headers },
        )
        .withResponse();
    const cases = [
      [ask({ user_id: 'a-user-id' }), 'a-user-id'],
      [ask({ external_user_id: 'a-external', user_id: 'ignored' }), 'a-external'],
      [ask({ user_id: 'ignored' }, { 'x-gw-external-user-id': 'a-header' }), 'a-header'],
    ] as const;
    for (const [pending, externalId] of cases) {
      const { response } = await pending;
      const row = await eventually(async () => {
        const { rows } = await db.query<{ external_user_id: string }>(
          `SELECT p.external_user_id FROM usage_records u
             JOIN product_users p ON p.id = u.product_user_id WHERE u.request_id = $1`,
          [response.headers.get('x-request-id')],
        );
        return rows[0];
      });
      expect(row.external_user_id).toBe(externalId);
    }
  });

  it('counts tokens', async () => {
    const params = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'How many tokens is this?' }],
    };
    const counted = await client.messages.countTokens(params);
    expect(counted.input_tokens).toBe(countInputTokens(messagesTexts(params)));
  });

  it('lists models in the messages-protocol format', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining([MODEL, 'vendor_b/gpt-4o-mini']));
    const chatFormat = await getJson<{ object: string }>(
      `${gateway.url}/v1/models`,
      bearer(org.api_key),
    );
    expect(chatFormat.body.object).toBe('list');
  });

  it('retrieves one model in the messages-protocol format', async () => {
    const model = await client.models.retrieve(MODEL);
    expect(model).toEqual({
      type: 'model',
      id: MODEL,
      display_name: MODEL,
      created_at: '2025-01-01T00:00:00Z',
    });
    await expect(client.models.retrieve('vendor_a/nope')).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it('requires max_tokens, naming the field', async () => {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.api_key },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as {
      type: string;
      error: { type: string; code: string; message: string };
    };
    expect(body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', code: 'gw_invalid_request' },
    });
    expect(body.error.message).toMatch(/^max_tokens:/);
  });

  it('maps errors to the client classes', async () => {
    const bad = clientFor(gateway.url, `gw_${'Q'.repeat(43)}`);
    await expect(
      bad.messages.create({
        model: MODEL,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_b/*');
    await expect(
      clientFor(gateway.url, narrow.key).messages.create({
        model: MODEL,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    await expect(
      client.messages.create({
        model: 'vendor_a/nope',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(
      client.messages.create({
        model: MODEL,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x mock:fault=overloaded' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.APIError);
  });
});

describe('anthropic client: every key and model error code', () => {
  it('surfaces each as its client class, with the vendor error type', async () => {
    const revoked = await createApiKey(env, org.app_connection_id);
    await revokeApiKey(env, revoked.id);
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_b/*');
    const params = {
      model: MODEL,
      max_tokens: 5,
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    const cases = [
      [
        'not-a-gateway-key',
        params,
        Anthropic.AuthenticationError,
        'gw_malformed_or_missing_key',
        'authentication_error',
      ],
      [
        `gw_${'Q'.repeat(43)}`,
        params,
        Anthropic.AuthenticationError,
        'gw_unknown_key',
        'authentication_error',
      ],
      [
        revoked.key,
        params,
        Anthropic.AuthenticationError,
        'gw_key_inactive',
        'authentication_error',
      ],
      [
        narrow.key,
        params,
        Anthropic.PermissionDeniedError,
        'gw_model_not_allowed',
        'permission_error',
      ],
      [
        org.api_key,
        { ...params, model: 'vendor_c/unknown' },
        Anthropic.NotFoundError,
        'gw_unsupported_model',
        'not_found_error',
      ],
      // vendor_b models have no messages-protocol route.
      [
        org.api_key,
        { ...params, model: 'vendor_b/gpt-4o-mini' },
        Anthropic.NotFoundError,
        'gw_unsupported_model',
        'not_found_error',
      ],
    ] as const;
    for (const [apiKey, request, errorClass, code, type] of cases) {
      const error = await clientFor(gateway.url, apiKey)
        .messages.create(request)
        .catch((caught: unknown) => caught);
      expect(error, code).toBeInstanceOf(errorClass);
      expect(error, code).toMatchObject({
        type,
        error: { type: 'error', error: { type, code } },
      });
    }
    // count_tokens and the models list authenticate the same way.
    await expect(
      clientFor(gateway.url, revoked.key).messages.countTokens({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    await expect(
      clientFor(gateway.url, narrow.key).messages.countTokens({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    await expect(
      clientFor(gateway.url, `gw_${'Q'.repeat(43)}`).models.list(),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const narrowIds: string[] = [];
    for await (const model of clientFor(gateway.url, narrow.key).models.list()) {
      narrowIds.push(model.id);
    }
    expect(narrowIds.length).toBeGreaterThan(0);
    expect(narrowIds.every((id) => id.startsWith('vendor_b/'))).toBe(true);
  });

  it('maps upstream failures to the vendor error types without leaking the upstream key', async () => {
    const failing = (fault: string) =>
      client.messages
        .create({
          model: MODEL,
          max_tokens: 5,
          messages: [{ role: 'user', content: `x mock:fault=${fault}` }],
        })
        .catch((caught: unknown) => caught);
    const limited = await failing('rate_limit');
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited).toMatchObject({ type: 'rate_limit_error' });
    const broken = await failing('server_error');
    expect(broken).toBeInstanceOf(Anthropic.InternalServerError);
    expect(broken).toMatchObject({
      type: 'api_error',
      error: { error: { code: 'gw_upstream_error' } },
    });
    expect(JSON.stringify(broken)).not.toContain(MOCK_SYSTEM_KEY);
  });
});

describe('a client that goes away mid-stream', () => {
  it('aborts upstream, settles the partial usage and leaves no hold', async () => {
    const slow = await startGateway({ ...env, MOCK_VENDOR_TOKENS_PER_SECOND: '20' });
    try {
      const abortable = clientFor(slow.url, org.api_key);
      const stream = abortable.messages.stream({
        model: MODEL,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Long answer. mock:output_tokens=200' }],
      });
      const requestId = (await stream.withResponse()).response.headers.get('x-request-id');
      let deltas = 0;
      try {
        for await (const event of stream) {
          if (event.type === 'content_block_delta') deltas += 1;
          if (deltas === 3) {
            stream.abort();
            // the SDK may still hand over events it had already read (CI saw a fourth)
            break;
          }
        }
      } catch (error) {
        expect(error).toBeInstanceOf(Anthropic.APIUserAbortError);
      }
      expect(deltas).toBe(3);
      expect(requestId).toBeTruthy();
      const row = await ledgerRow<{ status: string; output_tokens: number }>(
        db,
        requestId,
        'status, output_tokens',
      );
      expect(row.status).toBe('client_aborted');
      expect(row.output_tokens).toBeGreaterThanOrEqual(3);
      expect(row.output_tokens).toBeLessThan(200);
      const wallet = await runCliJson<{ reserved: string }>(
        ['wallet', 'show', '--org-id', org.org_id],
        env,
      );
      expect(wallet.reserved).toBe('0.000000000000');
    } finally {
      await slow.stop();
    }
  });
});

describe('GET /inference-keys/usage', () => {
  it('reports the calling key spend, matching its ledger rows', async () => {
    const fresh = await seed(env);
    const keyClient = clientFor(gateway.url, fresh.api_key);
    await keyClient.messages.create({
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'one mock:output_tokens=3' }],
    });
    await keyClient.messages.create({
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'two mock:output_tokens=5' }],
    });
    interface Totals {
      sell_cost: string;
      input_tokens: number;
      output_tokens: number;
      total_tokens: number;
      request_count: number;
    }
    const usage = await eventually(async () => {
      const response = await getJson<{ key_id: string; total: Totals; this_month: Totals }>(
        `${gateway.url}/inference-keys/usage`,
        bearer(fresh.api_key),
      );
      return response.body.total.request_count === 2 ? response.body : undefined;
    });
    expect(usage.total.output_tokens).toBe(8);
    expect(usage.total.sell_cost).toMatch(/^\d+\.\d{12}$/);
    expect(usage.this_month).toEqual(usage.total);
    const { rows } = await db.query<{
      sell_cost: string;
      input_tokens: number;
      output_tokens: number;
      request_count: number;
    }>(
      `SELECT sum(sell_cost)::text AS sell_cost, sum(input_tokens)::int AS input_tokens,
              sum(output_tokens)::int AS output_tokens, count(*)::int AS request_count
         FROM usage_records WHERE api_key_id = $1`,
      [usage.key_id],
    );
    const row = rows[0]!;
    expect(usage.total).toEqual({
      sell_cost: row.sell_cost,
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      total_tokens: row.input_tokens + row.output_tokens,
      request_count: row.request_count,
    });
    // Another key's spend is not this key's.
    const other = await getJson<{ total: Totals }>(
      `${gateway.url}/inference-keys/usage`,
      bearer(org.api_key),
    );
    expect(other.body.total.request_count).not.toBe(2);
  });
});
