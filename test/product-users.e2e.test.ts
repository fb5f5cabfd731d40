// Product-user attribution on inference requests: created once on first sight (even under
// concurrent first requests through two instances), identifier precedence, profile fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emailHash } from '../src/product-users/directory.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
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
