// Input a new user gets wrong, answered in plain words: validator text never leaks, roles,
// content types and max tokens are checked as the vendors' APIs check them, and a reused
// Idempotency-Key with another body is a conflict rather than a silent replay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('firstin');
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

const chat = (body: unknown) =>
  postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, body, bearer(org.api_key));
const hello = [{ role: 'user', content: 'Hello' }];

describe('validation messages name the field and the rule in plain words', () => {
  it.each([
    [
      { model: 'vendor_b/gpt-4o-mini', messages: hello, max_tokens: 1e20 },
      'max_tokens: must be a whole number at most 9007199254740991',
    ],
    [
      { model: 'vendor_b/gpt-4o-mini', messages: hello, max_tokens: 1.5 },
      'max_tokens: must be a whole number',
    ],
    [{ model: 'vendor_b/gpt-4o-mini', messages: [] }, 'messages: must have at least 1 item'],
    [{ messages: hello }, 'model: is required'],
    [
      { model: 'vendor_b/gpt-4o-mini', messages: hello, stream: 'yes' },
      'stream: must be true or false',
    ],
  ])('%j → %s', async (body, message) => {
    const response = await chat(body);
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({ code: 'gw_invalid_request', message });
  });

  it('management bodies too: the field, or the unknown field', async () => {
    const send = async (body: Record<string, unknown>) => {
      const response = await fetch(`${gateway.url}/product-users/by-external-id`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
        body: JSON.stringify({ app_id: org.app_id, external_user_id: 'u', ...body }),
      });
      return { status: response.status, body: (await response.json()) as ErrorBody };
    };
    expect(await send({ email: 'nope' })).toEqual({
      status: 400,
      body: { error: { code: 'gw_invalid_request', message: 'email: must be an e-mail address' } },
    });
    expect(await send({ extra: 1 })).toEqual({
      status: 400,
      body: { error: { code: 'gw_invalid_request', message: 'body: unknown field extra' } },
    });
  });
});

describe('input the vendors refuse is refused', () => {
  it('an unknown chat role is 400 naming the allowed roles', async () => {
    const response = await chat({
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'robot', content: 'beep' }],
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'messages.0.role: must be one of system, developer, user, assistant, tool, function',
    });
  });

  it('an unknown messages-protocol role is 400', async () => {
    const response = await postJson<ErrorBody>(
      `${gateway.url}/v1/messages`,
      {
        model: 'vendor_a/claude-haiku-4-5',
        max_tokens: 16,
        messages: [{ role: 'robot', content: 'x' }],
      },
      { 'x-api-key': org.api_key, 'vendor-version': '2023-06-01' },
    );
    expect(response.status).toBe(400);
    expect(response.body.error.message).toBe('messages.0.role: must be one of user, assistant');
  });

  it('content-type text/plain on a JSON route is 400; application/json with a charset is fine', async () => {
    const send = (contentType: string) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': contentType, ...bearer(org.api_key) },
        body: JSON.stringify({ model: 'vendor_b/gpt-4o-mini', messages: hello, max_tokens: 8 }),
      });
    const plain = await send('text/plain');
    expect(plain.status).toBe(400);
    expect(await plain.json()).toEqual({
      error: {
        code: 'gw_invalid_request',
        message: 'content-type: must be application/json (the body was sent as text/plain)',
      },
    });
    expect((await send('application/json; charset=utf-8')).status).toBe(200);
  });

  it('max_tokens above the model maximum is 400 and holds nothing', async () => {
    const response = await chat({
      model: 'vendor_b/gpt-4o-mini',
      messages: hello,
      max_tokens: 100_000,
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'max_tokens: must be at most 16384, the maximum output of vendor_b/gpt-4o-mini',
    });
    const completion = await chat({
      model: 'vendor_b/gpt-4o-mini',
      messages: hello,
      max_completion_tokens: 16_385,
    });
    expect(completion.body.error.message).toMatch(/^max_completion_tokens: must be at most 16384/);
    // Both sent: the vendor may honour either, so the larger is what is checked and held.
    const both = await chat({
      model: 'vendor_b/gpt-4o-mini',
      messages: hello,
      max_completion_tokens: 10,
      max_tokens: 100_000,
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/^max_tokens: must be at most 16384/);
    const held = async (limits: Record<string, number>): Promise<string> => {
      const answer = await chat({ model: 'vendor_b/gpt-4o-mini', messages: hello, ...limits });
      expect(answer.status).toBe(200);
      const row = await ledgerRow<{ reserved_amount: string }>(
        db,
        answer.headers.get('x-request-id'),
        'reserved_amount::text',
      );
      return row.reserved_amount;
    };
    expect(await held({ max_completion_tokens: 10, max_tokens: 2_000 })).toBe(
      await held({ max_tokens: 2_000 }),
    );
    expect(await held({ max_completion_tokens: 2_000, max_tokens: 10 })).toBe(
      await held({ max_completion_tokens: 2_000 }),
    );
    expect(await held({ max_completion_tokens: 10 })).not.toBe(await held({ max_tokens: 2_000 }));
    expect(
      (await chat({ model: 'vendor_b/gpt-4o-mini', messages: hello, max_tokens: 16_384 })).status,
    ).toBe(200);
  });

  it('a messages request over the maximum is refused naming max_tokens, its only limit', async () => {
    // The messages protocol has no max_completion_tokens: one sent along passes through
    // unread, and the refusal names the field that was checked.
    const response = await postJson<ErrorBody>(
      `${gateway.url}/v1/messages`,
      {
        model: 'vendor_a/claude-haiku-4-5',
        max_tokens: 10_000_000,
        max_completion_tokens: 10_000_000,
        messages: [{ role: 'user', content: 'x' }],
      },
      { 'x-api-key': org.api_key, 'vendor-version': '2023-06-01' },
    );
    expect(response.status).toBe(400);
    expect(response.body.error.message).toMatch(/^max_tokens: must be at most /);
  });
});

describe('Idempotency-Key on credit grants', () => {
  const grant = (key: string, amount: string) =>
    fetch(`${gateway.url}/product-users/by-external-id/credit-grants`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': key,
        ...bearer(org.service_key),
      },
      body: JSON.stringify({
        app_id: org.app_id,
        external_user_id: 'idem',
        amount,
        reason: 'promo',
      }),
    });

  it('same key and body replays the grant; same key with another body is 409 and grants nothing', async () => {
    await fetch(`${gateway.url}/product-users/by-external-id`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(org.service_key) },
      body: JSON.stringify({ app_id: org.app_id, external_user_id: 'idem' }),
    });
    const first = await grant('promo-1', '1.00');
    expect(first.status).toBe(201);
    const firstGrant = (await first.json()) as { grant_id: string };
    const replay = await grant('promo-1', '1.00');
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { grant_id: string }).grant_id).toBe(firstGrant.grant_id);

    const reused = await grant('promo-1', '5.00');
    expect(reused.status).toBe(409);
    expect(await reused.json()).toEqual({
      error: {
        code: 'gw_idempotency_key_reused',
        message:
          'Idempotency-Key was already used with a different request body; use a new key for a new grant',
      },
    });
    const { rows } = await db.query<{ amount: string }>(
      `SELECT g.amount::text AS amount FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id
        WHERE u.app_id = $1 AND u.external_user_id = 'idem'`,
      [org.app_id],
    );
    expect(rows.map((row) => Number(row.amount))).toEqual([1]);
  });
});
