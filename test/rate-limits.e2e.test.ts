// Per-API-key request rate limits through two real gateways (dist/), the dashboard API and the
// CLI, on the real Redis and Postgres: the refusal a client sees on both protocols (429
// gw_rate_limited, Retry-After, nothing held or recorded), one bucket across instances, product
// users' own buckets, a refusal for money using no rate, a change reaching running gateways
// (audited with the limits before and after), a connected app's OAuth token limited by the
// organization that pays for it, and tenants kept apart.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/ids.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';
import { createMember, DashboardClient, signInTo, uniqueEmail } from './support/dashboard.js';
import { bearer, postJson, postSse, type ErrorBody } from './support/http.js';
import { connectAndExchange, createOAuthClient } from './support/oauth.js';
import {
  runCli,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('rate-e2e');
const keys = createRedisKeys(prefix);
let first: GatewayProcess;
let second: GatewayProcess;
let tenant: SeededOrg;
let other: SeededOrg;
const emails = {
  admin: uniqueEmail('rate-admin'),
  member: uniqueEmail('rate-member'),
  otherAdmin: uniqueEmail('rate-other'),
};

interface ApiKey {
  id: string;
  key?: string;
  requests_per_minute: number | null;
  product_user_requests_per_minute: number | null;
}

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const apiKeysOf = (connectionId: string) => `/dashboard/api/connections/${connectionId}/api-keys`;

beforeAll(async () => {
  [first, second] = await Promise.all([startGateway(env), startGateway(env)]);
  [tenant, other] = await Promise.all([seed(env), seed(env)]);
  await createMember(env, emails.admin, tenant.org_id, 'admin');
  await createMember(env, emails.member, tenant.org_id, 'member');
  await createMember(env, emails.otherAdmin, other.org_id, 'admin');
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

async function infer(
  gateway: GatewayProcess,
  key: string,
  user?: string,
): Promise<{
  status: number;
  body: ErrorBody;
  retryAfter: string | null;
  retryAfterMs: string | null;
}> {
  const headers = { ...bearer(key), ...(user && { 'x-gw-external-user-id': user }) };
  const answer = await postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, headers);
  return {
    ...answer,
    retryAfter: answer.headers.get('retry-after'),
    retryAfterMs: answer.headers.get('retry-after-ms'),
  };
}

const statusOf = async (gateway: GatewayProcess, key: string, user?: string): Promise<number> =>
  (await infer(gateway, key, user)).status;

async function newKey(
  admin: DashboardClient,
  limits: Partial<Pick<ApiKey, 'requests_per_minute' | 'product_user_requests_per_minute'>>,
): Promise<ApiKey & { key: string }> {
  const created = await admin.post<ApiKey & { key: string }>(
    apiKeysOf(tenant.app_connection_id),
    limits,
  );
  expect(created.status).toBe(201);
  return created.body;
}

const walletState = async (orgId: string) => redis.hmget(keys.wallet(orgId), 'balance', 'reserved');
const recordsOf = async (keyId: string): Promise<number> =>
  (
    await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_records WHERE api_key_id = $1',
      [keyId],
    )
  ).rows[0]!.n;

describe('a key with requests_per_minute 3', () => {
  it('passes three requests across instances; the fourth is 429 gw_rate_limited with Retry-After, holding and recording nothing', async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, { requests_per_minute: 3 });
    expect(key).toMatchObject({ requests_per_minute: 3, product_user_requests_per_minute: null });
    // 20 s a request: a refusal's wait is 20 s less the time since the first of the three,
    // which is at most the time since it was sent here (a loaded machine takes seconds)
    const firstSentMs = Date.now();
    const shortestWaitS = (): number => Math.ceil((20_000 - (Date.now() - firstSentMs)) / 1000);
    expect(await statusOf(first, key.key)).toBe(200);
    expect(await statusOf(second, key.key)).toBe(200);
    expect(await statusOf(first, key.key)).toBe(200);
    await eventually(async () => ((await recordsOf(key.id)) === 3 ? true : undefined));
    const before = await walletState(tenant.org_id);
    expect(before[1]).toBe('0');

    const refused = await infer(second, key.key);
    const refusedWaitAtLeastS = shortestWaitS();
    expect(refused.status).toBe(429);
    // the wait rounded up to whole seconds: 19 or 20 when the three went at once
    expect(refused.retryAfter).toMatch(/^\d+$/);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(20);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(refusedWaitAtLeastS);
    // The exact wait for the clients that read it (the official OpenAI and Anthropic ones).
    expect(Number(refused.retryAfterMs)).toBeLessThanOrEqual(Number(refused.retryAfter) * 1000);
    expect(Number(refused.retryAfterMs)).toBeGreaterThan((Number(refused.retryAfter) - 1) * 1000);
    expect(refused.body).toEqual({
      error: {
        code: 'gw_rate_limited',
        rate_limit_scope: 'key',
        message: `this API key's limit of 3 requests per minute is reached; retry in ${refused.retryAfter} s`,
      },
    });
    // The messages protocol answers it in its own shape.
    const messages = await postJson<Record<string, unknown>>(
      `${second.url}/v1/messages`,
      { model: 'vendor_a/claude-haiku-4-5', max_tokens: 16, messages: chat.messages },
      bearer(key.key),
    );
    const messagesWaitAtLeastS = shortestWaitS();
    expect(messages.status).toBe(429);
    expect(messages.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(Number(messages.headers.get('retry-after'))).toBeLessThanOrEqual(20);
    expect(Number(messages.headers.get('retry-after'))).toBeGreaterThanOrEqual(
      messagesWaitAtLeastS,
    );
    expect(messages.body).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        code: 'gw_rate_limited',
        rate_limit_scope: 'key',
        message: `this API key's limit of 3 requests per minute is reached; retry in ${messages.headers.get('retry-after')} s`,
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await walletState(tenant.org_id)).toEqual(before);
    expect(await recordsOf(key.id)).toBe(3);

    // The official openai client sees a 429 it parses (and would retry after Retry-After).
    const client = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: key.key, maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: chat.model, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'gw_rate_limited' });
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toMatch(
      /^\d+$/,
    );

    // Twenty seconds later (the bucket's arrival time moved back by 20 s) one more passes. Only
    // `first` sees it: `second` refused the key and answers from that refusal until its wait
    // runs out (decision 347), which moving the bucket back does not shorten.
    const bucket = keys.keyRate(tenant.org_id, key.id);
    const [tatMs, ...rest] = (await redis.get(bucket))!.split(':');
    await redis.set(bucket, [Number(tatMs) - 20_000, ...rest].join(':'), 'PX', 60_000);
    expect(await statusOf(first, key.key)).toBe(200);
    expect(await statusOf(first, key.key)).toBe(429);
  });
});

describe("rate-limit headers (decision 353): where the key stands, in its protocol's names", () => {
  const messages = { model: 'vendor_a/claude-haiku-4-5', max_tokens: 16, messages: chat.messages };
  const openAiNames = [
    'x-ratelimit-limit-requests',
    'x-ratelimit-remaining-requests',
    'x-ratelimit-reset-requests',
  ];
  const anthropicNames = [
    'anthropic-ratelimit-requests-limit',
    'anthropic-ratelimit-requests-remaining',
    'anthropic-ratelimit-requests-reset',
  ];
  const pick = (headers: Headers, names: string[]) => names.map((name) => headers.get(name));
  /** A Go duration of whole ms or less (`12s`, `23.987s`, `1m0s`), in ms. */
  const durationMs = (text: string | null): number => {
    const parts = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s|(\d+)ms)$/.exec(text ?? '');
    expect(parts, String(text)).not.toBeNull();
    const [, minutes, seconds, ms] = parts!;
    return (
      Number(minutes ?? 0) * 60_000 + Math.round(Number(seconds ?? 0) * 1000) + Number(ms ?? 0)
    );
  };
  /** Anthropic's reset: an RFC 3339 time in whole seconds. */
  const timeMs = (text: string | null): number => {
    expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    return Date.parse(text!);
  };

  it('a key of 5 a minute is told 4, 3, 2, 1, 0 left, on both protocols, streamed or not, across instances, and on its 429s', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
        ...['--requests-per-minute', '5'],
      ],
      env,
    );
    const auth = bearer(created.key);
    const startedMs = Date.now();
    const first1 = await postJson(`${first.url}/v1/chat/completions`, chat, auth);
    expect(first1.status).toBe(200);
    // A fresh bucket: one request of 12 s in it, exactly.
    expect(pick(first1.headers, openAiNames)).toEqual(['5', '4', '12s']);
    expect(pick(first1.headers, anthropicNames)).toEqual([null, null, null]);

    // A stream has them with its first bytes, before its events.
    const streamed = await postSse(
      `${second.url}/v1/chat/completions`,
      { ...chat, stream: true },
      auth,
    );
    const secondDoneMs = Date.now();
    expect([streamed.status, streamed.headers.get('content-type')]).toEqual([
      200,
      'text/event-stream',
    ]);
    expect(pick(streamed.headers, openAiNames).slice(0, 2)).toEqual(['5', '3']);
    // Two requests ahead of the first one's now: 24 s less the time since (measured bound).
    const secondReset = durationMs(streamed.headers.get('x-ratelimit-reset-requests'));
    expect(secondReset).toBeLessThanOrEqual(24_000);
    expect(secondReset).toBeGreaterThanOrEqual(24_000 - (secondDoneMs - startedMs));

    // The messages protocol: Anthropic's names, the reset as the time the bucket is full.
    const third = await postJson(`${first.url}/v1/messages`, messages, auth);
    const thirdDoneMs = Date.now();
    expect(third.status).toBe(200);
    expect(pick(third.headers, openAiNames)).toEqual([null, null, null]);
    expect(pick(third.headers, anthropicNames).slice(0, 2)).toEqual(['5', '2']);
    const thirdReset = timeMs(third.headers.get('anthropic-ratelimit-requests-reset'));
    expect(thirdReset).toBeGreaterThanOrEqual(startedMs + 36_000);
    expect(thirdReset).toBeLessThan(thirdDoneMs + 37_000);
    const fourth = await postSse(`${second.url}/v1/messages`, { ...messages, stream: true }, auth);
    expect(fourth.status).toBe(200);
    expect(pick(fourth.headers, anthropicNames).slice(0, 2)).toEqual(['5', '1']);
    // Each request moves the full time 12 s on, exactly (12 s is whole seconds).
    expect(timeMs(fourth.headers.get('anthropic-ratelimit-requests-reset'))).toBe(
      thirdReset + 12_000,
    );
    const fifth = await postJson(`${first.url}/v1/chat/completions`, chat, auth);
    expect(pick(fifth.headers, openAiNames).slice(0, 2)).toEqual(['5', '0']);

    // The refusals carry them too: none left, and the bucket's full time unmoved.
    const refused = await postJson(`${first.url}/v1/chat/completions`, chat, auth);
    expect(refused.status).toBe(429);
    expect(pick(refused.headers, openAiNames).slice(0, 2)).toEqual(['5', '0']);
    expect(durationMs(refused.headers.get('x-ratelimit-reset-requests'))).toBeGreaterThan(
      Number(refused.headers.get('retry-after-ms')),
    );
    // `first` now answers the key from the refusal it remembers (decision 347), alike.
    const remembered = await postJson(`${first.url}/v1/messages`, messages, auth);
    expect(remembered.status).toBe(429);
    expect(pick(remembered.headers, anthropicNames).slice(0, 2)).toEqual(['5', '0']);
    expect(timeMs(remembered.headers.get('anthropic-ratelimit-requests-reset'))).toBe(
      thirdReset + 24_000,
    );
    const fromRedis = await postSse(
      `${second.url}/v1/messages`,
      { ...messages, stream: true },
      auth,
    );
    expect(fromRedis.status).toBe(429);
    expect(pick(fromRedis.headers, anthropicNames)).toEqual([
      '5',
      '0',
      remembered.headers.get('anthropic-ratelimit-requests-reset'),
    ]);
  });

  it('a key without a limit gets none of them, on either protocol, streamed or not', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      ['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
      env,
    );
    const auth = bearer(created.key);
    const answers = [
      await postJson(`${first.url}/v1/chat/completions`, chat, auth),
      await postSse(`${second.url}/v1/chat/completions`, { ...chat, stream: true }, auth),
      await postJson(`${first.url}/v1/messages`, messages, auth),
      await postSse(`${second.url}/v1/messages`, { ...messages, stream: true }, auth),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const names = [...answer.headers.keys()].filter((name) => name.includes('ratelimit'));
      expect(names).toEqual([]);
    }
  });
});

describe('count_tokens (decision 353)', () => {
  const countBody = { model: 'vendor_a/claude-haiku-4-5', messages: chat.messages };
  type CountBody = { input_tokens?: number } & ErrorBody;

  it("counts in a bucket of its own per key, of twice the key's requests a minute, told in Anthropic's headers", async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
        ...['--requests-per-minute', '1'],
      ],
      env,
    );
    const auth = bearer(created.key);
    const count = (gateway: GatewayProcess) =>
      postJson<CountBody>(`${gateway.url}/v1/messages/count_tokens`, countBody, auth);
    const firstCount = await count(first);
    expect(firstCount.status).toBe(200);
    expect(firstCount.body.input_tokens).toBeGreaterThan(0);
    expect(firstCount.headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
    expect(firstCount.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
    const secondCount = await count(second);
    expect(secondCount.status).toBe(200);
    expect(secondCount.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    const refused = await count(first);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        code: 'gw_rate_limited',
        rate_limit_scope: 'key',
        message: `this API key's limit of 2 token counts per minute is reached; retry in ${refused.headers.get('retry-after')} s`,
      },
    });
    expect(refused.headers.get('retry-after-ms')).toMatch(/^\d+$/);
    expect(refused.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    // The key's one request a minute is still there, and counts do not use it up.
    const message = await postJson(
      `${second.url}/v1/messages`,
      { ...countBody, max_tokens: 16 },
      auth,
    );
    expect(message.status).toBe(200);
    expect(message.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect(await redis.get(keys.countTokensRate(tenant.org_id, created.id))).toMatch(/:2$/);
  });

  it('a key without a limit counts without a bucket or a header', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      ['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
      env,
    );
    for (let index = 0; index < 3; index += 1) {
      const counted = await postJson(
        `${first.url}/v1/messages/count_tokens`,
        countBody,
        bearer(created.key),
      );
      expect(counted.status).toBe(200);
      expect([...counted.headers.keys()].filter((name) => name.includes('ratelimit'))).toEqual([]);
    }
    expect(await redis.exists(keys.countTokensRate(tenant.org_id, created.id))).toBe(0);
  });
});

describe('a flood on a key past its limit', () => {
  it('is refused before its product users are looked up: none is created for a refused request on an instance that already refused the key', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
        ...['--requests-per-minute', '1'],
      ],
      env,
    );
    const firstSentMs = Date.now();
    expect(await statusOf(first, created.key, 'flood-0')).toBe(200);
    expect(await statusOf(first, created.key, 'flood-1')).toBe(429);
    const flood = Array.from({ length: 10 }, (_, index) => `flood-${index + 2}`);
    for (const user of flood) {
      const refused = await infer(first, created.key, user);
      // a minute less the time since the first request, at most the time since it was sent
      // here: 59 or 60 s when the flood comes at once, less on a loaded machine
      const waitAtLeastS = Math.min(59, Math.ceil((60_000 - (Date.now() - firstSentMs)) / 1000));
      expect([
        refused.status,
        refused.body.error.code,
        refused.body.error.rate_limit_scope,
      ]).toEqual([429, 'gw_rate_limited', 'key']);
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(waitAtLeastS);
      expect(refused.body.error.message).toBe(
        `this API key's limit of 1 request per minute is reached; retry in ${refused.retryAfter} s`,
      );
    }
    const users = await db.query(
      'SELECT external_user_id FROM product_users WHERE org_id = $1 AND external_user_id = ANY($2)',
      [tenant.org_id, flood],
    );
    expect(users.rows).toEqual([]);
  });
});

describe('the official clients', () => {
  it('retry a refusal after the exact wait (retry-after-ms), not a whole second', async () => {
    const created = await runCliJson<{ id: string; key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
        ...['--requests-per-minute', '20'],
      ],
      env,
    );
    // Both gateways know the key (its first request loads it from Postgres).
    expect(await statusOf(first, created.key)).toBe(200);
    expect(await statusOf(second, created.key)).toBe(200);
    const bucket = keys.keyRate(tenant.org_id, created.id);
    // The attempts each client made: the bucket is filled just before the first, and one
    // request comes back every 3 s (20 a minute), so the first is refused unless it takes 3 s
    // to reach the gateway (at 120 a minute, a loaded CI run once took the 500 ms it had).
    let attempts: Array<{
      status: number;
      retryAfterMs: string | null;
      retryAfter: string | null;
    }> = [];
    const watched: typeof fetch = async (url, init) => {
      if (attempts.length === 0)
        await redis.set(bucket, `${Date.now() + 60_000}:0:20`, 'PX', 60_000);
      const response = await fetch(url, init);
      attempts.push({
        status: response.status,
        retryAfterMs: response.headers.get('retry-after-ms'),
        retryAfter: response.headers.get('retry-after'),
      });
      return response;
    };
    /** The refusal told the client the exact wait (at most 3 s), not only whole seconds. */
    const expectExactWait = () => {
      expect(attempts.map((attempt) => attempt.status)).toEqual([429, 200]);
      const refusal = attempts[0]!;
      expect(refusal.retryAfterMs).toMatch(/^\d+$/);
      const waitMs = Number(refusal.retryAfterMs);
      expect(waitMs).toBeGreaterThan(0);
      expect(waitMs).toBeLessThanOrEqual(3000);
      // Retry-After is the same wait in whole seconds, rounded up.
      expect(refusal.retryAfter).toBe(String(Math.ceil(waitMs / 1000)));
    };
    const openai = new OpenAI({
      baseURL: `${first.url}/v1`,
      apiKey: created.key,
      maxRetries: 1,
      fetch: watched,
    });
    const completion = await openai.chat.completions.create({
      model: chat.model,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.object).toBe('chat.completion');
    expectExactWait();

    attempts = [];
    const anthropic = new Anthropic({
      baseURL: second.url,
      apiKey: created.key,
      maxRetries: 1,
      fetch: watched,
    });
    const message = await anthropic.messages.create({
      model: 'vendor_a/claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(message.type).toBe('message');
    expectExactWait();
  });
});

describe('product_user_requests_per_minute', () => {
  it('gives each product user its own bucket under the key; the key limit holds for all of them', async () => {
    const created = await runCliJson<ApiKey & { key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', tenant.app_connection_id],
        ...['--requests-per-minute', '5', '--product-user-requests-per-minute', '2'],
      ],
      env,
    );
    expect(created).toMatchObject({ requests_per_minute: 5, product_user_requests_per_minute: 2 });
    const key = created.key;
    // The waits below shrink by the time these requests take (a loaded machine): bounded by it.
    const started = performance.now();
    const secondsSince = () => (performance.now() - started) / 1000;
    expect(await statusOf(first, key, 'user-a')).toBe(200);
    expect(await statusOf(second, key, 'user-a')).toBe(200);
    const userRefused = await infer(first, key, 'user-a');
    expect(userRefused.status).toBe(429);
    expect(userRefused.body.error).toMatchObject({
      code: 'gw_rate_limited',
      rate_limit_scope: 'product_user',
      message: `this product user's limit of 2 requests per minute under this key is reached; retry in ${userRefused.retryAfter} s`,
    });
    expect(await statusOf(second, key, 'user-b')).toBe(200);
    expect(await statusOf(first, key, 'user-b')).toBe(200);
    expect(await statusOf(second, key, 'user-c')).toBe(200);
    // Five requests made with the key: user-d's first is refused by the key's limit.
    const keyRefused = await infer(first, key, 'user-d');
    expect(keyRefused.status).toBe(429);
    expect(keyRefused.body.error).toMatchObject({
      rate_limit_scope: 'key',
      message: `this API key's limit of 5 requests per minute is reached; retry in ${keyRefused.retryAfter} s`,
    });
    // The key's first request frees its place 12 s after it was made.
    expect(Number(keyRefused.retryAfter)).toBeGreaterThanOrEqual(Math.floor(12 - secondsSince()));
    expect(Number(keyRefused.retryAfter)).toBeLessThanOrEqual(12);
    // user-a is refused by both buckets: the instance that remembers the key's refusal
    // answers user-a's own, longer wait (about 30 s), as the buckets would (decision 362).
    const bothRefused = await infer(first, key, 'user-a');
    expect(bothRefused.status).toBe(429);
    expect(bothRefused.body.error).toMatchObject({ rate_limit_scope: 'product_user' });
    expect(Number(bothRefused.retryAfter)).toBeGreaterThanOrEqual(Math.floor(30 - secondsSince()));
    expect(Number(bothRefused.retryAfter)).toBeGreaterThan(Number(keyRefused.retryAfter));
    expect(Number(bothRefused.retryAfter)).toBeLessThanOrEqual(30);
  });
});

describe('a rolling deploy', () => {
  it('reads an identity an older instance cached in Redis (without the limits) as unlimited until it expires', async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, { requests_per_minute: 1 });
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT k.id AS "keyId", k.org_id AS "orgId", k.app_id AS "appId",
              k.app_connection_id AS "appConnectionId", k.model_policy AS "modelPolicy"
         FROM api_keys k WHERE k.id = $1`,
      [key.id],
    );
    // The identity as the version before the limits wrote it: no limit fields.
    const older = {
      ...rows[0],
      active: true,
      requiresProductUser: false,
      creditMode: 'enforce',
      overrunPolicy: 'reject',
      expiresAtMs: null,
      oauthClientId: null,
    };
    const cached = keys.apiKey(sha256Hex(key.key));
    await redis.set(cached, JSON.stringify(older), 'EX', 300);
    for (const gateway of [first, second, first])
      expect(await statusOf(gateway, key.key)).toBe(200);
    expect(await redis.exists(keys.keyRate(tenant.org_id, key.id))).toBe(0);
  });
});

describe('a request refused for money', () => {
  it('does not use up the rate', async () => {
    const poor = await seed(env, ['--wallet', '0.00']);
    const created = await runCliJson<{ id: string; key: string }>(
      [
        ...['api-key', 'create', '--app-connection-id', poor.app_connection_id],
        ...['--requests-per-minute', '1'],
      ],
      env,
    );
    const short = await infer(first, created.key);
    expect([short.status, short.body.error.code]).toEqual([
      402,
      'gw_reservation_insufficient_balance',
    ]);
    expect(await redis.exists(keys.keyRate(poor.org_id, created.id))).toBe(0);
    await runCliJson(['wallet', 'topup', '--org-id', poor.org_id, '--amount', '1.00'], env);
    expect(await statusOf(second, created.key)).toBe(200);
    expect(await statusOf(first, created.key)).toBe(429);
  });
});

describe('limits changed through the dashboard API', () => {
  it('take effect on running gateways (the one answering at once, the others over pub/sub); null clears them; audited; rotation keeps them', async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, {});
    expect(key).toMatchObject({
      requests_per_minute: null,
      product_user_requests_per_minute: null,
    });
    // Both instances have the key's identity cached, without limits.
    for (const gateway of [first, second, first, second]) {
      expect(await statusOf(gateway, key.key)).toBe(200);
    }
    const limited = await admin.request<ApiKey>('PATCH', `/dashboard/api/api-keys/${key.id}`, {
      requests_per_minute: 1,
    });
    expect(limited.status).toBe(200);
    expect(limited.body).toMatchObject({
      requests_per_minute: 1,
      product_user_requests_per_minute: null,
    });
    // `first` answered the PATCH and dropped the key at once; `second` drops it when the
    // invalidation reaches it over pub/sub, moments later (a request it serves before that
    // is not counted): it then passes one request and refuses the next.
    await eventually(async () => ((await statusOf(second, key.key)) === 429 ? true : undefined));
    expect(await statusOf(first, key.key)).toBe(429);
    expect(await statusOf(second, key.key)).toBe(429);

    const cleared = await admin.request<ApiKey>('PATCH', `/dashboard/api/api-keys/${key.id}`, {
      requests_per_minute: null,
      product_user_requests_per_minute: 4,
    });
    expect(cleared.body).toMatchObject({
      requests_per_minute: null,
      product_user_requests_per_minute: 4,
    });
    await eventually(async () => ((await statusOf(second, key.key)) === 200 ? true : undefined));
    for (const gateway of [first, second, first]) {
      expect(await statusOf(gateway, key.key)).toBe(200);
    }
    const audit = await db.query<{ action: string; details: unknown }>(
      "SELECT action, details FROM dashboard_audit_log WHERE object_id = $1 AND action = 'api_key.update' ORDER BY id",
      [key.id],
    );
    // each change with the limits before it and after it
    expect(audit.rows).toEqual([
      {
        action: 'api_key.update',
        details: {
          requests_per_minute: 1,
          product_user_requests_per_minute: null,
          previous_requests_per_minute: null,
          previous_product_user_requests_per_minute: null,
        },
      },
      {
        action: 'api_key.update',
        details: {
          requests_per_minute: null,
          product_user_requests_per_minute: 4,
          previous_requests_per_minute: 1,
          previous_product_user_requests_per_minute: null,
        },
      },
    ]);

    const rotated = await admin.post<ApiKey>(`/dashboard/api/api-keys/${key.id}/rotate`, {});
    expect(rotated.status).toBe(201);
    expect(rotated.body).toMatchObject({
      requests_per_minute: null,
      product_user_requests_per_minute: 4,
    });
  });

  it('refuses a limit that is not an integer from 1 to 1,000,000 (400), changing nothing', async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, { requests_per_minute: 10 });
    const bad: unknown[] = [0, -1, 1_000_001, 1.5, '5', true, [], {}, 1e308];
    for (const value of bad) {
      for (const field of ['requests_per_minute', 'product_user_requests_per_minute']) {
        const patched = await admin.request<ErrorBody>(
          'PATCH',
          `/dashboard/api/api-keys/${key.id}`,
          { [field]: value },
        );
        expect([field, value, patched.status, patched.body.error.code]).toEqual([
          field,
          value,
          400,
          'gw_invalid_request',
        ]);
        const created = await admin.post<ErrorBody>(apiKeysOf(tenant.app_connection_id), {
          [field]: value,
        });
        expect([field, value, created.status]).toEqual([field, value, 400]);
      }
    }
    const unknown = await admin.request<ErrorBody>('PATCH', `/dashboard/api/api-keys/${key.id}`, {
      requests_per_hour: 5,
    });
    expect(unknown.status).toBe(400);
    // A change that names no limit is refused, as `gw api-key update` without one is: it would
    // be audited as a change and drop the key from every cache for nothing.
    const empty = await admin.request<ErrorBody>('PATCH', `/dashboard/api/api-keys/${key.id}`, {});
    expect([empty.status, empty.body.error.code]).toEqual([400, 'gw_invalid_request']);
    const audited = await db.query(
      "SELECT 1 FROM dashboard_audit_log WHERE object_id = $1 AND action = 'api_key.update'",
      [key.id],
    );
    expect(audited.rows).toEqual([]);
    const { rows } = await db.query(
      'SELECT requests_per_minute, product_user_requests_per_minute FROM api_keys WHERE id = $1',
      [key.id],
    );
    expect(rows).toEqual([{ requests_per_minute: 10, product_user_requests_per_minute: null }]);
  });

  it("an admin of another organization can neither read nor change a key's limits (404)", async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, { requests_per_minute: 10 });
    const stranger = await signInTo(second, emails.otherAdmin);
    const patched = await stranger.request<ErrorBody>(
      'PATCH',
      `/dashboard/api/api-keys/${key.id}`,
      {
        requests_per_minute: null,
      },
    );
    expect([patched.status, patched.body.error.code]).toEqual([404, 'gw_not_found']);
    const listed = await stranger.get<ErrorBody>(apiKeysOf(tenant.app_connection_id));
    expect([listed.status, listed.body.error.code]).toEqual([404, 'gw_not_found']);
    const { rows } = await db.query('SELECT requests_per_minute FROM api_keys WHERE id = $1', [
      key.id,
    ]);
    expect(rows).toEqual([{ requests_per_minute: 10 }]);
  });

  it('gw api-key update sets and clears limits (none), refusing anything else', async () => {
    const admin = await signInTo(first, emails.admin);
    const key = await newKey(admin, {});
    expect(
      await runCliJson(
        ['api-key', 'update', '--id', key.id, '--product-user-requests-per-minute', '7'],
        env,
      ),
    ).toMatchObject({ id: key.id, requests_per_minute: null, product_user_requests_per_minute: 7 });
    expect(
      await runCliJson(
        [
          ...['api-key', 'update', '--id', key.id, '--requests-per-minute', '30'],
          ...['--product-user-requests-per-minute', 'none'],
        ],
        env,
      ),
    ).toMatchObject({
      id: key.id,
      requests_per_minute: 30,
      product_user_requests_per_minute: null,
    });
    await expect(
      runCliJson(['api-key', 'update', '--id', key.id, '--requests-per-minute', '0'], env),
    ).rejects.toThrow(/--requests-per-minute must be a whole number from 1 to 1000000 or none/);
    await expect(
      runCliJson(
        [
          'api-key',
          'create',
          '--app-connection-id',
          tenant.app_connection_id,
          '--requests-per-minute',
          'none',
        ],
        env,
      ),
    ).rejects.toThrow(/--requests-per-minute must be a whole number from 1 to 1000000"/);
    // rotate and revoke take none (a rotation copies the limits): refused, the key unchanged.
    for (const action of ['rotate', 'revoke']) {
      await expect(
        runCliJson(['api-key', action, '--id', key.id, '--requests-per-minute', '5'], env),
      ).rejects.toThrow(/api-key \w+ takes no limit flags/);
    }
    const { rows } = await db.query(
      'SELECT status, replaced_by, requests_per_minute FROM api_keys WHERE id = $1',
      [key.id],
    );
    expect(rows).toEqual([{ status: 'active', replaced_by: null, requests_per_minute: 30 }]);
  });
});

describe('a key that no longer works', () => {
  it('keeps its limits: the PATCH and gw api-key update answer 409 gw_conflict (revoked, rotated past its grace, its connection revoked), changing and auditing nothing; nor is it rotated', async () => {
    const admin = await signInTo(first, emails.admin);
    const patch = (id: string) =>
      admin.request<ErrorBody>('PATCH', `/dashboard/api/api-keys/${id}`, {
        requests_per_minute: 1,
      });
    const revoked = await newKey(admin, { requests_per_minute: 10 });
    expect((await admin.post(`/dashboard/api/api-keys/${revoked.id}/revoke`)).status).toBe(200);
    // Rotated with a second of grace: stopped once the gateway refuses it.
    const expired = await newKey(admin, { requests_per_minute: 10 });
    const rotated = await admin.post(`/dashboard/api/api-keys/${expired.id}/rotate`, {
      grace_seconds: 1,
    });
    expect(rotated.status).toBe(201);
    await eventually(async () => ((await statusOf(first, expired.key)) === 401 ? true : undefined));
    // A connection of its own, revoked: its key's row stays active, the key does not work.
    const connection = await admin.post<{ id: string }>(
      `/dashboard/api/apps/${tenant.app_id}/connections`,
      { name: 'closing' },
    );
    expect(connection.status).toBe(201);
    const orphan = await admin.post<ApiKey & { key: string }>(apiKeysOf(connection.body.id), {
      requests_per_minute: 10,
    });
    expect(orphan.status).toBe(201);
    expect(
      (await admin.request('DELETE', `/dashboard/api/connections/${connection.body.id}`)).status,
    ).toBe(200);
    expect(await statusOf(first, orphan.body.key)).toBe(401);

    const cases = [
      [revoked.id, 'this API key is revoked'],
      [expired.id, 'this API key was rotated and its grace period has ended'],
      [orphan.body.id, "this API key's connection is revoked"],
    ] as const;
    for (const [id, why] of cases) {
      const refused = await patch(id);
      expect([refused.status, refused.body]).toEqual([
        409,
        {
          error: {
            code: 'gw_conflict',
            message: `${why}: its limits can no longer be changed`,
          },
        },
      ]);
      const cli = await runCli(
        ['api-key', 'update', '--id', id, '--requests-per-minute', 'none'],
        env,
      );
      expect([cli.code, cli.stdout, JSON.parse(cli.stderr)]).toEqual([
        2,
        '',
        {
          error: {
            code: 'gw_conflict',
            message: `${why}: its limits can no longer be changed`,
          },
        },
      ]);
    }
    // Nor is the key of a revoked connection rotated (its successor would never work).
    const rotation = await admin.post<ErrorBody>(
      `/dashboard/api/api-keys/${orphan.body.id}/rotate`,
    );
    expect([rotation.status, rotation.body]).toEqual([
      409,
      {
        error: {
          code: 'gw_conflict',
          message: "this API key's connection is revoked: it cannot be rotated",
        },
      },
    ]);
    const ids = cases.map(([id]) => id);
    const issued = await db.query('SELECT 1 FROM api_keys WHERE app_connection_id = $1', [
      connection.body.id,
    ]);
    expect(issued.rows).toHaveLength(1);
    const { rows } = await db.query(
      'SELECT requests_per_minute, product_user_requests_per_minute FROM api_keys WHERE id = ANY($1) ORDER BY id',
      [ids],
    );
    expect(rows).toEqual(
      ids.map(() => ({ requests_per_minute: 10, product_user_requests_per_minute: null })),
    );
    const audited = await db.query(
      "SELECT 1 FROM dashboard_audit_log WHERE object_id = ANY($1) AND action = 'api_key.update'",
      [ids],
    );
    expect(audited.rows).toEqual([]);
  });
});

describe("a connected app's OAuth token", () => {
  it('is limited by an admin of the organization that pays for it, through the same PATCH (and CLI); running gateways apply it; audited before and after; still never rotated', async () => {
    const payerAdmin = await signInTo(first, emails.admin);
    // an app of the other organization, connected to the tenant's wallet by its admin
    const client = await createOAuthClient(env, other.app_id, ['http://127.0.0.1:9/cb'], {
      public: true,
    });
    const token = await connectAndExchange(first.url, payerAdmin, client, {
      orgId: tenant.org_id,
    });
    const { rows: tokens } = await db.query<{ id: string; org_id: string }>(
      "SELECT id, org_id FROM api_keys WHERE app_connection_id = $1 AND kind = 'oauth_token'",
      [token.app_connection_id],
    );
    expect(tokens).toEqual([{ id: expect.stringMatching(/^key_/), org_id: tenant.org_id }]);
    const tokenId = tokens[0]!.id;
    const path = `/dashboard/api/api-keys/${tokenId}`;
    // Both instances have the token's identity cached, without limits.
    for (const gateway of [first, second, first, second]) {
      expect(await statusOf(gateway, token.access_token)).toBe(200);
    }

    // The app's maker does not own the row (404, as any other organization), a member of the
    // paying one may not change it (403): nothing changes.
    const maker = await signInTo(second, emails.otherAdmin);
    const byMaker = await maker.request<ErrorBody>('PATCH', path, { requests_per_minute: 1 });
    expect([byMaker.status, byMaker.body.error.code]).toEqual([404, 'gw_not_found']);
    const member = await signInTo(first, emails.member);
    const byMember = await member.request<ErrorBody>('PATCH', path, { requests_per_minute: 1 });
    expect([byMember.status, byMember.body.error.code]).toEqual([403, 'gw_role_forbidden']);
    const stored = async () =>
      (
        await db.query(
          `SELECT requests_per_minute AS rpm, product_user_requests_per_minute AS user_rpm
             FROM api_keys WHERE id = $1`,
          [tokenId],
        )
      ).rows;
    expect(await stored()).toEqual([{ rpm: null, user_rpm: null }]);

    const limited = await payerAdmin.request<ApiKey & { kind: string }>('PATCH', path, {
      requests_per_minute: 1,
    });
    expect(limited.status).toBe(200);
    expect(limited.body).toMatchObject({
      id: tokenId,
      kind: 'oauth_token',
      requests_per_minute: 1,
      product_user_requests_per_minute: null,
    });
    expect(await stored()).toEqual([{ rpm: 1, user_rpm: null }]);
    // `second` applies it once the invalidation reaches it: one request, then refusals, on
    // both instances (one bucket).
    await eventually(async () =>
      (await statusOf(second, token.access_token)) === 429 ? true : undefined,
    );
    const refused = await infer(first, token.access_token);
    expect([refused.status, refused.body.error.code, refused.body.error.rate_limit_scope]).toEqual([
      429,
      'gw_rate_limited',
      'key',
    ]);
    // named as what the app holds: not an API key of the organization's own
    expect(refused.body.error.message).toBe(
      `this connected app's limit of 1 request per minute is reached; retry in ${refused.retryAfter} s`,
    );
    // The connected apps page's list shows the token and its limits.
    const listed = await payerAdmin.get<{
      data: Array<{ id: string; token_id: string | null } & Omit<ApiKey, 'id'>>;
    }>(`/dashboard/api/orgs/${tenant.org_id}/connected-apps?limit=200`);
    expect(listed.body.data.find((app) => app.id === token.app_connection_id)).toMatchObject({
      token_id: tokenId,
      requests_per_minute: 1,
      product_user_requests_per_minute: null,
    });

    // `gw api-key update` changes it too: cleared, both instances let the app through again.
    expect(
      await runCliJson(
        ['api-key', 'update', '--id', tokenId, '--requests-per-minute', 'none'],
        env,
      ),
    ).toMatchObject({
      id: tokenId,
      requests_per_minute: null,
      product_user_requests_per_minute: null,
    });
    await eventually(async () =>
      (await statusOf(second, token.access_token)) === 200 ? true : undefined,
    );
    expect(await statusOf(first, token.access_token)).toBe(200);
    expect(await stored()).toEqual([{ rpm: null, user_rpm: null }]);

    const audit = await db.query(
      `SELECT org_id, user_id = 'cli' AS by_cli, details FROM dashboard_audit_log
        WHERE object_id = $1 AND action = 'api_key.update' ORDER BY id`,
      [tokenId],
    );
    expect(audit.rows).toEqual([
      {
        org_id: tenant.org_id,
        by_cli: false,
        details: {
          requests_per_minute: 1,
          product_user_requests_per_minute: null,
          previous_requests_per_minute: null,
          previous_product_user_requests_per_minute: null,
        },
      },
      {
        org_id: tenant.org_id,
        by_cli: true,
        details: {
          requests_per_minute: null,
          product_user_requests_per_minute: null,
          previous_requests_per_minute: 1,
          previous_product_user_requests_per_minute: null,
        },
      },
    ]);

    // A token is still not rotated: the app gets a new one by connecting again.
    const rotated = await payerAdmin.post<ErrorBody>(`${path}/rotate`, {});
    expect([rotated.status, rotated.body.error]).toEqual([
      409,
      {
        code: 'gw_conflict',
        message: 'an OAuth token is not rotated: the app gets a new one by connecting again',
      },
    ]);
    const { rowCount } = await db.query('SELECT 1 FROM api_keys WHERE app_connection_id = $1', [
      token.app_connection_id,
    ]);
    expect(rowCount).toBe(1);
  });
});
