// The official `openai` client pointed at the gateway: chat create, stream and the two-request
// tool loop on a vendor_b model and a vendor_a model (translated), models list, error classes.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOCK_SYSTEM_KEY } from '../src/providers/system-routes.js';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts } from '../src/tokens/request-texts.js';
import { isolatedContext } from './support/context.js';
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

const { env, db } = isolatedContext('openai');
let gateway: GatewayProcess;
let org: SeededOrg;
let client: OpenAI;

const weatherTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

function usageRow(requestId: string) {
  return ledgerRow<{ input_tokens: number; output_tokens: number; status: string; model: string }>(
    db,
    requestId,
    'input_tokens, output_tokens, status, model',
  );
}

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: org.api_key, maxRetries: 0 });
});

afterAll(async () => {
  await gateway?.stop();
});

describe.each(['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5'])(
  'openai client on %s',
  (model) => {
    it('creates a completion and the ledger row matches its usage', async () => {
      const { data, response } = await client.chat.completions
        .create({
          model,
          max_tokens: 12,
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Say hello. mock:output_tokens=6' },
          ],
          user: 'sdk-user',
        })
        .withResponse();
      expect(data.object).toBe('chat.completion');
      expect(data.choices[0]!.message.role).toBe('assistant');
      expect(typeof data.choices[0]!.message.content).toBe('string');
      expect(data.choices[0]!.finish_reason).toBe('stop');
      expect(data.usage!.completion_tokens).toBe(6);
      const row = await usageRow(response.headers.get('x-request-id')!);
      expect(row).toMatchObject({
        model,
        status: 'completed',
        output_tokens: 6,
        input_tokens: data.usage!.prompt_tokens,
      });
    });

    it('attributes to the product user from the header, metadata or user', async () => {
      const suffix = model.replace(/\W/g, '-');
      const ask = (extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
        client.chat.completions
          .create(
            {
              model,
              max_tokens: 5,
              messages: [{ role: 'user', content: 'hi mock:output_tokens=2' }],
              ...extra,
            } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
            { headers },
          )
          .withResponse();
      const cases = [
        [ask({ user: `u-${suffix}` }), `u-${suffix}`],
        [
          ask({
            metadata: {
              external_user_id: `m-${suffix}`,
              name: 'not a profile field',
              product_user: { display_name: 'Ada' },
            },
          }),
          `m-${suffix}`,
        ],
        [ask({ user: 'ignored' }, { 'x-gw-external-user-id': `h-${suffix}` }), `h-${suffix}`],
      ] as const;
      for (const [pending, externalId] of cases) {
        const { response } = await pending;
        const row = await eventually(async () => {
          const { rows } = await db.query<{ external_user_id: string; display_name: string }>(
            `SELECT p.external_user_id, p.display_name FROM usage_records u
               JOIN product_users p ON p.id = u.product_user_id WHERE u.request_id = $1`,
            [response.headers.get('x-request-id')],
          );
          return rows[0];
        });
        expect(row.external_user_id).toBe(externalId);
        if (externalId.startsWith('m-')) expect(row.display_name).toBe('Ada');
      }
    });

    it('streams, with the usage chunk when asked', async () => {
      const stream = await client.chat.completions.create({
        model,
        max_tokens: 12,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Stream please. mock:output_tokens=5' }],
      });
      let text = '';
      let usage: OpenAI.Completions.CompletionUsage | undefined | null;
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text.trim().split(/\s+/)).toHaveLength(5);
      expect(finish).toBe('stop');
      expect(usage?.completion_tokens).toBe(5);
    });

    it('runs the two-request tool loop', async () => {
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'What is the weather in Paris?' },
      ];
      const first = await client.chat.completions.create({
        model,
        max_tokens: 200,
        messages,
        tools: [weatherTool],
        tool_choice: 'auto',
      });
      const call = first.choices[0]!.message.tool_calls?.[0];
      expect(first.choices[0]!.finish_reason).toBe('tool_calls');
      expect(call?.type).toBe('function');
      if (call?.type !== 'function') throw new Error('expected a function call');
      expect(call.function.name).toBe('get_weather');
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'mock' });
      messages.push(first.choices[0]!.message, {
        role: 'tool',
        tool_call_id: call.id,
        content: '{"temp_c": 21}',
      });
      const secondParams = { model, max_tokens: 20, messages, tools: [weatherTool] };
      const second = await client.chat.completions.create(secondParams);
      // The reservation's estimate is never below what the vendor reports, translated or not.
      const estimate = countInputTokens(
        chatCompletionTexts(secondParams as unknown as Record<string, unknown>),
      );
      expect(estimate).toBeGreaterThanOrEqual(second.usage!.prompt_tokens);
      expect(second.choices[0]!.finish_reason).toBe('stop');
      expect(typeof second.choices[0]!.message.content).toBe('string');
    });

    it('streams a tool call as argument deltas', async () => {
      const stream = await client.chat.completions.create({
        model,
        max_tokens: 200,
        stream: true,
        messages: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [weatherTool],
      });
      let name = '';
      let args = '';
      for await (const chunk of stream) {
        const call = chunk.choices[0]?.delta.tool_calls?.[0];
        name += call?.function?.name ?? '';
        args += call?.function?.arguments ?? '';
      }
      expect(name).toBe('get_weather');
      expect(JSON.parse(args)).toEqual({ city: 'mock' });
    });
  },
);

describe('openai client: models and errors', () => {
  it('lists the models the key may use', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model.id);
    expect(models).toEqual(
      expect.arrayContaining(['vendor_a/claude-haiku-4-5', 'vendor_b/gpt-4o-mini']),
    );
  });

  it('retrieves one model as the list shows it, and refuses unknown and forbidden ones', async () => {
    // The client percent-encodes the id's '/'; the path as written works too.
    const model = await client.models.retrieve('vendor_b/gpt-4o-mini');
    expect(model).toEqual({
      id: 'vendor_b/gpt-4o-mini',
      object: 'model',
      created: 1735689600,
      owned_by: 'vendor_b',
    });
    const written = await fetch(`${gateway.url}/v1/models/vendor_a/claude-haiku-4-5`, {
      headers: { authorization: `Bearer ${org.api_key}` },
    });
    expect(written.status).toBe(200);
    expect(((await written.json()) as { id: string }).id).toBe('vendor_a/claude-haiku-4-5');
    const unknown = client.models.retrieve('vendor_b/nope');
    await expect(unknown).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(unknown).rejects.toMatchObject({ code: 'gw_unsupported_model' });
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_b/*');
    const limited = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: narrow.key });
    await expect(limited.models.retrieve('vendor_a/claude-haiku-4-5')).rejects.toMatchObject({
      status: 403,
      code: 'gw_model_not_allowed',
    });
  });

  it('maps errors to the client classes', async () => {
    const bad = new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: `gw_${'Z'.repeat(43)}`,
      maxRetries: 0,
    });
    await expect(
      bad.chat.completions.create({
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_b/*');
    const limited = new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: narrow.key,
      maxRetries: 0,
    });
    const denied = limited.chat.completions.create({
      model: 'vendor_a/claude-haiku-4-5',
      messages: [{ role: 'user', content: 'x' }],
    });
    await expect(denied).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    await expect(denied).rejects.toMatchObject({ code: 'gw_model_not_allowed' });
    await expect(
      client.chat.completions.create({
        model: 'vendor_b/nope',
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.chat.completions.create({ model: 'vendor_b/gpt-4o-mini', messages: [] }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(
      client.chat.completions.create({
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'x mock:fault=rate_limit' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });

  it('surfaces every key and model error code as its client class', async () => {
    const request = {
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'x' }],
    };
    const using = (apiKey: string) =>
      new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0 });
    const revoked = await createApiKey(env, org.app_connection_id);
    await revokeApiKey(env, revoked.id);
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_a/*');
    const cases = [
      [
        using('not-a-gateway-key'),
        request,
        OpenAI.AuthenticationError,
        'gw_malformed_or_missing_key',
      ],
      [using(`gw_${'Z'.repeat(43)}`), request, OpenAI.AuthenticationError, 'gw_unknown_key'],
      [using(revoked.key), request, OpenAI.AuthenticationError, 'gw_key_inactive'],
      [using(narrow.key), request, OpenAI.PermissionDeniedError, 'gw_model_not_allowed'],
      [
        client,
        { ...request, model: 'vendor_c/unknown' },
        OpenAI.NotFoundError,
        'gw_unsupported_model',
      ],
    ] as const;
    for (const [caller, params, errorClass, code] of cases) {
      const attempt = caller.chat.completions.create(params);
      await expect(attempt, code).rejects.toBeInstanceOf(errorClass);
      await expect(attempt, code).rejects.toMatchObject({ code });
    }
  });

  it('maps upstream failures without leaking the upstream key', async () => {
    for (const model of ['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5']) {
      const attempt = client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'x mock:fault=server_error' }],
      });
      await expect(attempt, model).rejects.toBeInstanceOf(OpenAI.InternalServerError);
      await expect(attempt, model).rejects.toMatchObject({ code: 'gw_upstream_error' });
      const error = await attempt.catch((caught: unknown) => caught);
      expect(JSON.stringify(error)).not.toContain(MOCK_SYSTEM_KEY);
    }
    await expect(
      client.chat.completions.create({
        model: 'vendor_a/claude-haiku-4-5',
        messages: [{ role: 'user', content: 'x mock:fault=rate_limit' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });
});

describe('openai client that goes away mid-stream', () => {
  it('aborts upstream and settles the partial usage on both vendors, leaving no hold', async () => {
    const slow = await startGateway({ ...env, MOCK_VENDOR_TOKENS_PER_SECOND: '20' });
    try {
      const abortable = new OpenAI({
        baseURL: `${slow.url}/v1`,
        apiKey: org.api_key,
        maxRetries: 0,
      });
      for (const model of ['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5']) {
        const { data: stream, response } = await abortable.chat.completions
          .create({
            model,
            max_tokens: 200,
            stream: true,
            messages: [{ role: 'user', content: 'Long answer. mock:output_tokens=200' }],
          })
          .withResponse();
        let contentChunks = 0;
        try {
          for await (const chunk of stream) {
            if (chunk.choices[0]?.delta.content) contentChunks += 1;
            if (contentChunks === 3) {
              stream.controller.abort();
              break; // a chunk already buffered by the SDK must not be counted
            }
          }
        } catch (error) {
          expect(error, model).toBeInstanceOf(OpenAI.APIUserAbortError);
        }
        expect(contentChunks, model).toBe(3);
        const row = await ledgerRow<{ status: string; output_tokens: number }>(
          db,
          response.headers.get('x-request-id'),
          'status, output_tokens',
        );
        expect(row.status, model).toBe('client_aborted');
        expect(row.output_tokens, model).toBeGreaterThanOrEqual(3);
        expect(row.output_tokens, model).toBeLessThan(200);
      }
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
