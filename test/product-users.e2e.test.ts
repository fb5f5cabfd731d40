// Product-user attribution on inference requests: created once on first sight (even under
// concurrent first requests through two instances), identifier precedence, profile fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailHash } from '../src/product-users/directory.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, type ErrorBody } from './support/http.js';
import { rawRequest } from './support/raw-http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('pu');
let gateways: GatewayProcess[];
let org: SeededOrg;

const message = [{ role: 'user', content: 'hi' }];

async function usersNamed(externalUserId: string) {
  const { rows } = await db.query<{
    id: string;
    display_name: string;
    email_hash: string | null;
    metadata: Record<string, unknown>;
    last_app_connection_id: string;
  }>(
    'SELECT id, display_name, email_hash, metadata, last_app_connection_id FROM product_users WHERE app_id = $1 AND external_user_id = $2',
    [org.app_id, externalUserId],
  );
  return rows;
}

beforeAll(async () => {
  gateways = await Promise.all([startGateway(env), startGateway(env)]);
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

describe('product-user attribution', () => {
  it('creates exactly one product user under 40 concurrent first requests on two instances', async () => {
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        postJson(
          `${gateways[index % 2]!.url}/v1/chat/completions`,
          { model: 'vendor_b/gpt-4o-mini', messages: message },
          { ...bearer(org.api_key), 'x-gw-external-user-id': 'racer-1' },
        ),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(40).fill(200));
    expect(await usersNamed('racer-1')).toHaveLength(1);
  });

  it('prefers the header, then metadata.external_user_id, then user', async () => {
    await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: message,
        user: 'u-field',
        metadata: { external_user_id: 'u-meta' },
      },
      { ...bearer(org.api_key), 'x-gw-external-user-id': 'u-header' },
    );
    await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: message,
        user: 'u-field2',
        metadata: { external_user_id: 'u-meta2' },
      },
      bearer(org.api_key),
    );
    await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: message, user: 'u-field3' },
      bearer(org.api_key),
    );
    expect(await usersNamed('u-header')).toHaveLength(1);
    expect(await usersNamed('u-meta')).toHaveLength(0);
    expect(await usersNamed('u-field')).toHaveLength(0);
    expect(await usersNamed('u-meta2')).toHaveLength(1);
    expect(await usersNamed('u-field2')).toHaveLength(0);
    expect(await usersNamed('u-field3')).toHaveLength(1);
  });

  it('stores the nested profile (e-mail only as its hash) and ignores metadata.name/email', async () => {
    const response = await postJson(
      `${gateways[1]!.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: message,
        metadata: {
          external_user_id: 'profiled',
          name: 'Not A Profile Field',
          email: 'not-profile@example.com',
          product_user: {
            display_name: 'Ada',
            email: 'Ada@Example.com',
            metadata: { plan: 'pro' },
          },
        },
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    const [user] = await usersNamed('profiled');
    expect(user).toMatchObject({
      display_name: 'Ada',
      email_hash: emailHash('Ada@Example.com'),
      metadata: { plan: 'pro' },
      last_app_connection_id: org.app_connection_id,
    });
    expect(user!.email_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('accepts the flat compatibility profile fields', async () => {
    await postJson(
      `${gateways[0]!.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: message,
        user: 'flat-user',
        product_user_display_name: 'Flat',
        product_user_email: 'flat@example.com',
        product_user_metadata: { tier: 2 },
      },
      bearer(org.api_key),
    );
    const [user] = await usersNamed('flat-user');
    expect(user).toMatchObject({
      display_name: 'Flat',
      email_hash: emailHash('flat@example.com'),
      metadata: { tier: 2 },
    });
  });
});

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  postJson<ErrorBody>(
    `${gateways[0]!.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: message, ...body },
    { ...bearer(org.api_key), ...headers },
  );

async function productUserCount(): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    'SELECT count(*) FROM product_users WHERE app_id = $1',
    [org.app_id],
  );
  return Number(rows[0]!.count);
}

describe('the X-GW-External-User-ID header as bytes on the wire', () => {
  /** A chat request whose identifier header carries exactly `value`'s bytes. */
  function chatWithHeaderBytes(value: Buffer) {
    const body = JSON.stringify({ model: 'vendor_b/gpt-4o-mini', messages: message });
    const head = Buffer.concat([
      Buffer.from(
        [
          'POST /v1/chat/completions HTTP/1.1',
          'Host: 127.0.0.1',
          `Authorization: Bearer ${org.api_key}`,
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(body)}`,
          'X-GW-External-User-ID: ',
        ].join('\r\n'),
      ),
      value,
    ]);
    return rawRequest(gateways[0]!.port, head, body);
  }

  it('refuses non-ASCII, invalid UTF-8 and empty values with 400 instead of attributing what the parser kept', async () => {
    const before = await productUserCount();
    const refused: Record<string, Buffer> = {
      'CJK only (arrives empty)': Buffer.from('用户', 'utf8'),
      'non-ASCII inside': Buffer.from('zoë-li', 'utf8'),
      'latin-1 byte inside': Buffer.from('zo\xebli', 'latin1'),
      'CJK inside': Buffer.from('a用户b', 'utf8'),
      empty: Buffer.alloc(0),
      'spaces only': Buffer.from('   '),
    };
    for (const [name, value] of Object.entries(refused)) {
      const answer = await chatWithHeaderBytes(value);
      const error = (JSON.parse(answer.body) as ErrorBody).error;
      expect([name, answer.status, error.code]).toEqual([name, 400, 'gw_invalid_request']);
      expect(error.message).toMatch(/^X-GW-External-User-ID: /);
    }
    expect(await productUserCount()).toBe(before);
  });

  it('attributes an ASCII header as sent, and keeps a non-ASCII id sent in the body apart from its ASCII prefix', async () => {
    const ascii = await chatWithHeaderBytes(Buffer.from('jos'));
    expect(ascii.status).toBe(200);
    expect((await chat({ user: 'josé' })).status).toBe(200);
    expect((await chat({ metadata: { external_user_id: '用户' } })).status).toBe(200);
    expect(await usersNamed('jos')).toHaveLength(1);
    expect(await usersNamed('josé')).toHaveLength(1);
    expect(await usersNamed('用户')).toHaveLength(1);
    expect((await usersNamed('josé'))[0]!.id).not.toBe((await usersNamed('jos'))[0]!.id);
  });
});

describe('attribution fields of the wrong type', () => {
  it('refuses each with 400 gw_invalid_request naming the field, and creates no user', async () => {
    const before = await productUserCount();
    const cases: Array<[string, Record<string, unknown>]> = [
      ['metadata.external_user_id', { metadata: { external_user_id: 42 } }],
      ['metadata.external_user_id', { metadata: { external_user_id: null } }],
      ['metadata.product_user', { user: 'typed', metadata: { product_user: 'Ada' } }],
      [
        'metadata.product_user.display_name',
        { user: 'typed', metadata: { product_user: { display_name: 5 } } },
      ],
      ['metadata.product_user.email', { user: 'typed', metadata: { product_user: { email: [] } } }],
      ['product_user_display_name', { user: 'typed', product_user_display_name: 5 }],
      ['product_user_email', { user: 'typed', product_user_email: 5 }],
      ['product_user_metadata', { user: 'typed', product_user_metadata: 'plan=pro' }],
      ['product_user_metadata', { user: 'typed', product_user_metadata: [1] }],
    ];
    for (const [field, body] of cases) {
      const response = await chat(body);
      expect([field, response.status, response.body.error.code]).toEqual([
        field,
        400,
        'gw_invalid_request',
      ]);
      expect(response.body.error.message.startsWith(`${field}: `)).toBe(true);
    }
    expect(await productUserCount()).toBe(before);
  });
});

describe('metadata.user_id on the messages route', () => {
  it('refuses one that is not a string, and attributes a string one', async () => {
    const send = (userId: unknown) =>
      postJson<ErrorBody>(
        `${gateways[0]!.url}/v1/messages`,
        {
          model: 'vendor_a/claude-haiku-4-5',
          max_tokens: 16,
          messages: message,
          metadata: { user_id: userId },
        },
        { 'x-api-key': org.api_key, 'vendor-version': '2023-06-01' },
      );
    const refused = await send(42);
    expect([refused.status, refused.body.error.code]).toEqual([400, 'gw_invalid_request']);
    expect(refused.body.error.message).toBe('metadata.user_id: must be a string');
    expect((await send('messages-user')).status).toBe(200);
    expect(await usersNamed('messages-user')).toHaveLength(1);
  });
});

describe('the product-user e-mail on inference', () => {
  it('follows the management API: a malformed address is refused, surrounding spaces are trimmed', async () => {
    const junk = await chat({ user: 'mailer', product_user_email: 'not-an-email' });
    expect([junk.status, junk.body.error.code]).toEqual([400, 'gw_invalid_request']);
    expect(junk.body.error.message).toBe('product_user_email: must be an e-mail address');
    expect(await usersNamed('mailer')).toHaveLength(0);
    const spaced = await chat({
      user: 'mailer',
      metadata: { product_user: { email: ' Alice@Example.com ' } },
    });
    expect(spaced.status).toBe(200);
    expect((await usersNamed('mailer'))[0]!.email_hash).toBe(emailHash('alice@example.com'));
  });
});
