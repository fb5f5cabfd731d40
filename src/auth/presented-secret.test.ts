// What each store answers for each way a credential header can be wrong: exact codes and
// messages, and never the presented secret in them.
import { describe, expect, it } from 'vitest';
import type { DbPool } from '../db/pool.js';
import { ApiKeyStore } from './api-key-store.js';
import { ServiceKeyStore } from './service-key-store.js';
import { readPresentedSecret } from './presented-secret.js';
import type { RedisClient } from '../redis/connect.js';
import { createRedisKeys } from '../redis/keys.js';

const apiKey = `gw_${'a1'.repeat(20)}`;
const serviceKey = `gw_svc_${'b2'.repeat(20)}`;

// Header problems are answered before any lookup: these stores never touch Postgres or Redis.
const unreachable = new Proxy(
  {},
  {
    get() {
      throw new Error('no I/O expected');
    },
  },
);
const redisStandIn = { defineCommand: () => undefined } as unknown as RedisClient;
const apiKeys = new ApiKeyStore(unreachable as DbPool, redisStandIn, createRedisKeys('t'), 0, {
  records: unreachable as never,
});
const serviceKeys = new ServiceKeyStore(unreachable as DbPool, 0, {
  records: unreachable as never,
});

describe('readPresentedSecret', () => {
  it.each([
    [{}, { kind: 'absent' }],
    [{ authorization: `Bearer ${apiKey}` }, { kind: 'secret', secret: apiKey }],
    [{ authorization: `bearer   ${apiKey}  ` }, { kind: 'secret', secret: apiKey }],
    [{ authorization: `Basic ${apiKey}` }, { kind: 'wrong_scheme', scheme: 'Basic' }],
    [{ authorization: `${apiKey}` }, { kind: 'missing_bearer' }],
    [{ authorization: 'Bearer' }, { kind: 'empty', header: 'authorization' }],
    [{ authorization: '   ' }, { kind: 'empty', header: 'authorization' }],
    [{ authorization: `Bearer ${apiKey} extra` }, { kind: 'extra_tokens' }],
    [{ authorization: `gw_x:y ${apiKey}` }, { kind: 'missing_bearer' }],
    [{ authorization: `Te$t ${apiKey}` }, { kind: 'wrong_scheme', scheme: undefined }],
    [{ 'x-api-key': apiKey }, { kind: 'secret', secret: apiKey }],
    [{ 'x-api-key': ' ' }, { kind: 'empty', header: 'x-api-key' }],
  ])('%o → %o', (headers, expected) => {
    expect(readPresentedSecret(headers, { xApiKey: true })).toEqual(expected);
  });

  it('ignores x-api-key where only Authorization is read', () => {
    expect(readPresentedSecret({ 'x-api-key': apiKey }, { xApiKey: false })).toEqual({
      kind: 'absent',
    });
  });
});

describe('API-key routes say what was wrong with the header', () => {
  it.each([
    [
      {},
      'gw_malformed_or_missing_key',
      'missing API key: send Authorization: Bearer gw_… or x-api-key: gw_…',
    ],
    [
      { authorization: `Basic ${apiKey}` },
      'gw_malformed_or_missing_key',
      'the Authorization header uses the Basic scheme, not Bearer: send Authorization: Bearer gw_…',
    ],
    [
      { authorization: apiKey },
      'gw_malformed_or_missing_key',
      'the Authorization header holds a value without the Bearer scheme: send Authorization: Bearer gw_…',
    ],
    [
      { authorization: 'Bearer ' },
      'gw_malformed_or_missing_key',
      'the Authorization header has the Bearer scheme but no API key: send Authorization: Bearer gw_…',
    ],
    [
      { 'x-api-key': '' },
      'gw_malformed_or_missing_key',
      'the x-api-key header is empty: send the API key in it',
    ],
    [
      { authorization: `Bearer ${apiKey} ${apiKey}` },
      'gw_malformed_or_missing_key',
      'the Authorization header holds more than one value after Bearer: send Authorization: Bearer gw_…',
    ],
    [
      { authorization: 'Bearer sk-not-ours-0123456789' },
      'gw_malformed_or_missing_key',
      'the presented value is not an API key: API keys start with gw_',
    ],
    [
      { authorization: 'Bearer gw_short' },
      'gw_malformed_or_missing_key',
      'malformed API key: expected gw_ followed by 32 to 64 letters and digits',
    ],
    [
      { authorization: `Bearer ${serviceKey}` },
      'gw_unknown_key',
      'a service key (gw_svc_…) cannot make inference calls: send an API key (gw_…)',
    ],
    [
      // an OAuth token is an inference credential too (docs/oauth.md): its shape is checked
      { authorization: `Bearer gw_oauth_${'c3'.repeat(5)}` },
      'gw_malformed_or_missing_key',
      'malformed OAuth token: expected gw_oauth_ followed by 32 to 64 letters and digits',
    ],
  ])('%o → %s', async (headers, code, message) => {
    const answer = await apiKeys.authenticate(headers);
    expect(answer).toEqual({ code, status: 401, message });
    expect(message).not.toContain(apiKey.slice(3));
  });
});

describe('service-key routes say what was wrong with the header', () => {
  it.each([
    [{}, 'missing service key: send Authorization: Bearer gw_svc_…'],
    [
      { authorization: `Basic ${serviceKey}` },
      'the Authorization header uses the Basic scheme, not Bearer: send Authorization: Bearer gw_svc_…',
    ],
    [
      { authorization: serviceKey },
      'the Authorization header holds a value without the Bearer scheme: send Authorization: Bearer gw_svc_…',
    ],
    [
      { authorization: 'Bearer' },
      'the Authorization header has the Bearer scheme but no service key: send Authorization: Bearer gw_svc_…',
    ],
    [
      { authorization: `Bearer ${apiKey}` },
      'these routes take a service key (gw_svc_…), not an API key (gw_…)',
    ],
    [
      { authorization: 'Bearer something-else' },
      'the presented value is not a service key: service keys start with gw_svc_',
    ],
    [
      { authorization: 'Bearer gw_svc_short' },
      'malformed service key: expected gw_svc_ followed by 32 to 64 letters and digits',
    ],
    [{ 'x-api-key': serviceKey }, 'missing service key: send Authorization: Bearer gw_svc_…'],
  ])('%o → %s', async (headers, message) => {
    const answer = await serviceKeys.authenticate(headers, 'product_users:read');
    expect(answer).toEqual({ code: 'gw_malformed_or_missing_service_key', status: 401, message });
    expect(message).not.toContain(serviceKey.slice(7));
  });
});
