// API-key authentication on the inference route, across two gateway instances.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, postJson, type ErrorBody } from './support/http.js';
import { firstNot200 } from './support/services.js';
import {
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
  createApiKey,
  revokeApiKey,
} from './support/processes.js';

const { env } = isolatedContext('auth');
let first: GatewayProcess;
let second: GatewayProcess;
let org: SeededOrg;

const chat = { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

beforeAll(async () => {
  [first, second] = await Promise.all([startGateway(env), startGateway(env)]);
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

describe('API-key authentication', () => {
  it('401 gw_malformed_or_missing_key without a key', async () => {
    const response = await postJson<ErrorBody>(`${first.url}/v1/chat/completions`, chat);
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('gw_malformed_or_missing_key');
  });

  it('401 gw_malformed_or_missing_key for a key of the wrong shape', async () => {
    for (const header of ['Bearer not-a-gw-key', 'Basic abc', 'Bearer gw_short']) {
      const response = await postJson<ErrorBody>(`${first.url}/v1/chat/completions`, chat, {
        authorization: header,
      });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('gw_malformed_or_missing_key');
    }
  });

  it('401 gw_unknown_key for a well-formed key nobody issued; the message never echoes it', async () => {
    const fake = `gw_${'A'.repeat(43)}`;
    const response = await postJson<ErrorBody>(
      `${first.url}/v1/chat/completions`,
      chat,
      bearer(fake),
    );
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('gw_unknown_key');
    expect(response.body.error.message).not.toContain(fake);
  });

  it('refuses a service key on the inference route', async () => {
    const response = await postJson<ErrorBody>(
      `${first.url}/v1/chat/completions`,
      chat,
      bearer(org.service_key),
    );
    expect(response.status).toBe(401);
    expect(response.body.error.code).toBe('gw_unknown_key');
    expect(response.body.error.message).toBe(
      'a service key (gw_svc_…) cannot make inference calls: send an API key (gw_…)',
    );
  });

  it('says what was wrong with the Authorization header, without echoing the key', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [
        { authorization: `Basic ${org.api_key}` },
        'the Authorization header uses the Basic scheme, not Bearer: send Authorization: Bearer gw_…',
      ],
      [
        { authorization: org.api_key },
        'the Authorization header holds a value without the Bearer scheme: send Authorization: Bearer gw_…',
      ],
      [
        { authorization: 'Bearer ' },
        'the Authorization header has the Bearer scheme but no API key: send Authorization: Bearer gw_…',
      ],
    ];
    for (const [headers, message] of cases) {
      const response = await postJson<ErrorBody>(`${first.url}/v1/chat/completions`, chat, headers);
      expect(response.status).toBe(401);
      expect(response.body.error).toEqual({ code: 'gw_malformed_or_missing_key', message });
    }
    const onServiceRoute = await getJson<ErrorBody>(
      `${first.url}/product-users/by-external-id?app_id=${org.app_id}&external_user_id=u1`,
      { authorization: `Basic ${org.service_key}` },
    );
    expect(onServiceRoute.status).toBe(401);
    expect(onServiceRoute.body.error).toEqual({
      code: 'gw_malformed_or_missing_service_key',
      message:
        'the Authorization header uses the Basic scheme, not Bearer: send Authorization: Bearer gw_svc_…',
    });
  });

  it('a revoked key answers gw_key_inactive on every instance once the invalidation arrives', async () => {
    const issued = await createApiKey(env, org.app_connection_id);
    // Both instances have it cached.
    for (const gateway of [first, second]) {
      expect(
        (await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(issued.key))).status,
      ).toBe(200);
    }
    // the key as the dashboard API's revoke answers it
    expect(await revokeApiKey(env, issued.id)).toMatchObject({
      id: issued.id,
      app_connection_id: org.app_connection_id,
      status: 'revoked',
      revoked_at: expect.any(String),
    });
    // By the invalidation, not the cache's expiry (AUTH_CACHE_TTL_MS, 30 s): served until it
    // arrives, then refused.
    for (const gateway of [first, second]) {
      const response = await firstNot200(() =>
        postJson<ErrorBody>(`${gateway.url}/v1/chat/completions`, chat, bearer(issued.key)),
      );
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('gw_key_inactive');
    }
  });

  it('gw_model_not_allowed (403) for a model outside the key policy', async () => {
    const narrow = await createApiKey(env, org.app_connection_id, 'vendor_a/*');
    const response = await postJson<ErrorBody>(
      `${first.url}/v1/chat/completions`,
      chat,
      bearer(narrow.key),
    );
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('gw_model_not_allowed');
  });
});
