// What an app built on the official clients sees of gw's refusals, with the clients' default
// retries on (test/sdk-openai.e2e.test.ts and test/sdk-anthropic.e2e.test.ts map each code to
// its error class with retries off): the allowance and wallet refusals and the key and model
// errors are answered once and never retried; a request-rate refusal (429) and an unavailable
// gateway (503) are retried after the wait the gateway names, and the retry is served. Each
// answer the client got is recorded by the fetch it was given. Also: product-user attribution
// from a client's default headers.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { isolatedContext } from './support/context.js';
import { startFreezableRelay, type FreezableRelay } from './support/freezable-relay.js';
import {
  createApiKey,
  revokeApiKey,
  runCliJson,
  seed,
  setProductUserCap,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('sdk-retries');
let gateway: GatewayProcess;
let org: SeededOrg;
const CHAT_MODEL = 'vendor_b/gpt-4o-mini';
const MESSAGES_MODEL = 'vendor_a/claude-haiku-4-5';

/** An answer the client received: its status and gw code. */
interface Answer {
  readonly status: number;
  /** When the client sent the request and got this answer (performance.now()). */
  readonly sentAtMs: number;
  readonly answeredAtMs: number;
  readonly code: string | undefined;
  readonly retryAfterMs: number | undefined;
}

/** A fetch for a client that records every answer it gets (and may act on each first). */
function recordingFetch(onAnswer?: (answer: Answer) => void): {
  fetch: typeof fetch;
  answers: Answer[];
} {
  const answers: Answer[] = [];
  const recording: typeof fetch = async (input, init) => {
    const sentAtMs = performance.now();
    const response = await fetch(input, init);
    const answeredAtMs = performance.now();
    const body =
      response.status >= 400
        ? ((await response.clone().json()) as { error?: { code?: string } })
        : undefined;
    const retryAfterMs = response.headers.get('retry-after-ms');
    const answer = {
      status: response.status,
      sentAtMs,
      answeredAtMs,
      code: body?.error?.code,
      retryAfterMs: retryAfterMs === null ? undefined : Number(retryAfterMs),
    };
    answers.push(answer);
    onAnswer?.(answer);
    return response;
  };
  return { fetch: recording, answers };
}

const brief = ({ status, code, retryAfterMs }: Answer) => ({ status, code, retryAfterMs });

/** How long the client waited after its first answer before it sent the retry. */
const waitedMs = (answers: readonly Answer[]): number =>
  answers[1]!.sentAtMs - answers[0]!.answeredAtMs;

/** The official clients with their default retries (2), through a recording fetch. */
function openaiClient(apiKey: string, recorder: { fetch: typeof fetch }, url = gateway.url) {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, fetch: recorder.fetch });
}
function anthropicClient(apiKey: string, recorder: { fetch: typeof fetch }, url = gateway.url) {
  return new Anthropic({
    baseURL: url,
    apiKey,
    fetch: recorder.fetch,
    defaultHeaders: { 'vendor-version': '2023-06-01' },
  });
}

const chat = (client: OpenAI, extra: Record<string, unknown> = {}) =>
  client.chat.completions.create({
    model: CHAT_MODEL,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'hi mock:output_tokens=2' }],
    ...extra,
  } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
const message = (client: Anthropic, extra: Record<string, unknown> = {}) =>
  client.messages.create({
    model: MESSAGES_MODEL,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'hi mock:output_tokens=2' }],
    ...extra,
  } as Anthropic.MessageCreateParamsNonStreaming);

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('refusals a retry cannot change: answered once, never retried', () => {
  it('openai: the allowance refusal is a PermissionDeniedError carrying the amounts', async () => {
    await setProductUserCap(env, org.app_id, 'sdk-poor', '0.000001');
    const recorder = recordingFetch();
    const error = await chat(openaiClient(org.api_key, recorder), { user: 'sdk-poor' }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const refused = error as InstanceType<typeof OpenAI.PermissionDeniedError>;
    // The spec's shape: `code` is the status as text; the gateway's code and the amounts are
    // under provider_specific_fields, and the message states the cost and what is left.
    expect(refused.status).toBe(403);
    expect(refused.code).toBe('403');
    expect(refused.message).toMatch(
      /^403 estimated request cost \d+\.\d{12} USD exceeds the product user's remaining allowance of 0\.000001000000 USD/,
    );
    expect(refused.error).toMatchObject({
      provider_specific_fields: {
        error: {
          code: 'gw_product_user_allowance_insufficient',
          params: { cap_amount: '0.000001000000', available_allowance: '0.000001000000' },
        },
      },
    });
    expect(refused.requestID).toMatch(/^[0-9a-f-]{36}$/);
    expect(recorder.answers.map(brief)).toEqual([
      { status: 403, code: '403', retryAfterMs: undefined },
    ]);
  });

  it('anthropic: the allowance refusal is a PermissionDeniedError of type permission_error', async () => {
    await setProductUserCap(env, org.app_id, 'sdk-poor-messages', '0.000001');
    const recorder = recordingFetch();
    const error = await message(anthropicClient(org.api_key, recorder), {
      metadata: { user_id: 'sdk-poor-messages' },
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const refused = error as InstanceType<typeof Anthropic.PermissionDeniedError>;
    expect(refused.status).toBe(403);
    expect(refused.error).toMatchObject({
      type: 'error',
      error: {
        type: 'permission_error',
        code: '403',
        provider_specific_fields: { error: { code: 'gw_product_user_allowance_insufficient' } },
      },
    });
    // The request id where this client reads it (`request-id`), the same as x-request-id.
    expect(refused.requestID).toMatch(/^[0-9a-f-]{36}$/);
    expect(refused.requestID).toBe(refused.headers?.get('x-request-id'));
    expect(recorder.answers.map(brief)).toEqual([
      { status: 403, code: '403', retryAfterMs: undefined },
    ]);
  });

  it('the wallet refusal (402), a revoked key (401) and an unknown model (404), on both clients', async () => {
    const broke = await seed(env, ['--wallet', '0']);
    const revoked = await createApiKey(env, org.app_connection_id);
    await revokeApiKey(env, revoked.id);
    const cases = [
      [broke.api_key, CHAT_MODEL, 402, 'gw_reservation_insufficient_balance'],
      [revoked.key, CHAT_MODEL, 401, 'gw_key_inactive'],
      [org.api_key, 'vendor_b/nope', 404, 'gw_unsupported_model'],
    ] as const;
    for (const [apiKey, model, status, code] of cases) {
      const viaOpenai = recordingFetch();
      const openaiError = (await chat(openaiClient(apiKey, viaOpenai), { model }).catch(
        (caught: unknown) => caught,
      )) as InstanceType<typeof OpenAI.APIError>;
      expect(openaiError, code).toBeInstanceOf(OpenAI.APIError);
      expect({ status: openaiError.status, code: openaiError.code }).toEqual({ status, code });
      expect(openaiError.message).toMatch(new RegExp(`^${status} \\S`));
      expect(viaOpenai.answers.map(brief), code).toEqual([
        { status, code, retryAfterMs: undefined },
      ]);

      const viaAnthropic = recordingFetch();
      const anthropicModel = model === CHAT_MODEL ? MESSAGES_MODEL : 'vendor_a/nope';
      const anthropicError = (await message(anthropicClient(apiKey, viaAnthropic), {
        model: anthropicModel,
      }).catch((caught: unknown) => caught)) as InstanceType<typeof Anthropic.APIError>;
      expect(anthropicError, code).toBeInstanceOf(Anthropic.APIError);
      expect(anthropicError.status, code).toBe(status);
      expect(anthropicError.error, code).toMatchObject({ type: 'error', error: { code } });
      expect(viaAnthropic.answers.map(brief), code).toEqual([
        { status, code, retryAfterMs: undefined },
      ]);
    }
  });
});

describe("the vendor refusing the gateway's own key", () => {
  let vendor: RunningMockVendors;
  let keyless: GatewayProcess;
  beforeAll(async () => {
    vendor = await startMockVendors({ port: 0 });
    // Both vendors at a mock, with no key for either: the mock answers 401 to every call.
    keyless = await startGateway({
      ...env,
      VENDOR_A_BASE_URL: vendor.url,
      VENDOR_B_BASE_URL: vendor.url,
    });
  });
  afterAll(async () => {
    await keyless?.stop();
    await vendor?.close();
  });

  it('is a 502 gw_upstream_error that neither client retries (x-should-retry: false)', async () => {
    const viaOpenai = recordingFetch();
    const openaiError = (await chat(openaiClient(org.api_key, viaOpenai, keyless.url)).catch(
      (caught: unknown) => caught,
    )) as InstanceType<typeof OpenAI.APIError>;
    expect(openaiError).toBeInstanceOf(OpenAI.InternalServerError);
    expect({ status: openaiError.status, code: openaiError.code }).toEqual({
      status: 502,
      code: 'gw_upstream_error',
    });
    expect(openaiError.headers?.get('x-should-retry')).toBe('false');
    // whose key was refused and that a retry does not help (decision 583)
    expect(openaiError.message).toBe(
      "502 vendor_b answered 401: it refused the vendor key gw sent (the gateway operator's, or your organization's provider credential); a retry will not help until that key is mended",
    );
    expect(viaOpenai.answers.map(brief)).toEqual([
      { status: 502, code: 'gw_upstream_error', retryAfterMs: undefined },
    ]);

    const viaAnthropic = recordingFetch();
    const anthropicError = (await message(
      anthropicClient(org.api_key, viaAnthropic, keyless.url),
    ).catch((caught: unknown) => caught)) as InstanceType<typeof Anthropic.APIError>;
    expect(anthropicError).toBeInstanceOf(Anthropic.InternalServerError);
    expect(anthropicError.status).toBe(502);
    expect(viaAnthropic.answers.map(brief)).toEqual([
      { status: 502, code: 'gw_upstream_error', retryAfterMs: undefined },
    ]);
  });
});

describe('refusals that pass: retried after the named wait, then served', () => {
  /**
   * A key of 20 requests a minute whose burst is spent, and whose next request passes no sooner
   * than in 1.5 s (of the 3 s each one takes to come back): the client's first try is refused.
   */
  async function spentKey(): Promise<string> {
    const key = await runCliJson<{ key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', org.app_connection_id],
        ...['--requests-per-minute', '20'],
      ],
      env,
    );
    for (let sent = 0; ; sent += 1) {
      expect(sent, 'requests before the burst is spent').toBeLessThanOrEqual(60);
      const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: CHAT_MODEL,
          max_tokens: 5,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });
      await answer.arrayBuffer();
      if (answer.status === 429 && Number(answer.headers.get('retry-after-ms')) >= 1_500) break;
    }
    return key.key;
  }

  it('openai: a 429 gw_rate_limited is retried after retry-after-ms and the retry is served', async () => {
    const recorder = recordingFetch();
    const completion = await chat(openaiClient(await spentKey(), recorder));
    expect(completion.object).toBe('chat.completion');
    expect(recorder.answers.map(({ status, code }) => [status, code])).toEqual([
      [429, 'gw_rate_limited'],
      [200, undefined],
    ]);
    // It waited as long as the gateway said (less a timer's rounding).
    expect(recorder.answers[0]!.retryAfterMs).toBeGreaterThan(0);
    expect(waitedMs(recorder.answers)).toBeGreaterThanOrEqual(
      recorder.answers[0]!.retryAfterMs! - 2,
    );
  });

  it('anthropic: a 429 gw_rate_limited is retried after retry-after-ms and the retry is served', async () => {
    const recorder = recordingFetch();
    const answer = await message(anthropicClient(await spentKey(), recorder));
    expect(answer.type).toBe('message');
    expect(answer._request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(recorder.answers.map(({ status, code }) => [status, code])).toEqual([
      [429, 'gw_rate_limited'],
      [200, undefined],
    ]);
    expect(waitedMs(recorder.answers)).toBeGreaterThanOrEqual(
      recorder.answers[0]!.retryAfterMs! - 2,
    );
  });

  describe('a gateway whose Redis hangs', () => {
    let relay: FreezableRelay;
    let hanging: GatewayProcess;

    beforeAll(async () => {
      const redis = new URL(env.REDIS_URL!);
      relay = await startFreezableRelay({ host: redis.hostname, port: Number(redis.port) });
      hanging = await startGateway({
        ...env,
        REDIS_URL: `redis://127.0.0.1:${relay.port}`,
        REDIS_CLUSTER_NODES: '',
        REDIS_TIMEOUT_MS: '300',
      });
    });

    afterAll(async () => {
      relay?.thaw();
      await hanging?.stop();
      await relay?.close();
    });

    it('answers 503 gw_unavailable with retry-after; both clients retry, and the retry is served', async () => {
      const clients = [
        (recorder: ReturnType<typeof recordingFetch>) =>
          chat(openaiClient(org.api_key, recorder, hanging.url)).then((done) => done.object),
        (recorder: ReturnType<typeof recordingFetch>) =>
          message(anthropicClient(org.api_key, recorder, hanging.url)).then((done) => done.type),
      ];
      for (const ask of clients) {
        // Warm: the key is cached, so the first wait on Redis is the request's reserve.
        expect(await ask(recordingFetch())).toMatch(/^(chat\.completion|message)$/);
        relay.freeze();
        // Redis answers again while the client waits to retry.
        const recorder = recordingFetch(() => relay.thaw());
        try {
          expect(await ask(recorder)).toMatch(/^(chat\.completion|message)$/);
        } finally {
          relay.thaw();
        }
        expect(recorder.answers.map(({ status, code }) => [status, code])).toEqual([
          [503, 'gw_unavailable'],
          [200, undefined],
        ]);
      }
    });
  });
});

describe('product-user attribution through a client', () => {
  it('attributes every request of a client made with X-GW-External-User-ID in its default headers', async () => {
    const client = new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: org.api_key,
      maxRetries: 0,
      defaultHeaders: { 'X-GW-External-User-ID': 'sdk-default-header-user' },
    });
    const anthropic = new Anthropic({
      baseURL: gateway.url,
      apiKey: org.api_key,
      maxRetries: 0,
      defaultHeaders: {
        'vendor-version': '2023-06-01',
        'X-GW-External-User-ID': 'sdk-default-header-user',
      },
    });
    const ids = [
      (await chat(client).withResponse()).response.headers.get('x-request-id'),
      (await message(anthropic).withResponse()).response.headers.get('x-request-id'),
    ];
    const rows = await eventually(async () => {
      const { rows: found } = await db.query<{ external_user_id: string }>(
        `SELECT p.external_user_id FROM usage_records u
           JOIN product_users p ON p.id = u.product_user_id WHERE u.request_id = ANY($1)`,
        [ids],
      );
      return found.length === 2 ? found : undefined;
    });
    expect(rows.map((row) => row.external_user_id)).toEqual([
      'sdk-default-header-user',
      'sdk-default-header-user',
    ]);
  });
});
