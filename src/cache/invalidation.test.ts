// The wire form of cache invalidations: typed both ways, and the strings earlier versions sent.
import { describe, expect, it } from 'vitest';
import { decodeInvalidation, encodeInvalidation, type CacheInvalidation } from './invalidation.js';

describe('cache invalidation messages', () => {
  const cases: Array<[CacheInvalidation, string]> = [
    [{ kind: 'api-key', keyHash: 'ab12' }, 'apikey:ab12'],
    [{ kind: 'all-api-keys' }, 'apikey:*'],
    [{ kind: 'service-keys' }, 'service-keys'],
    [{ kind: 'caps' }, 'caps'],
    [{ kind: 'credentials' }, 'credentials'],
    [{ kind: 'product-user', appId: 'app_1', externalUserId: 'u:"1"' }, 'pu:["app_1","u:\\"1\\""]'],
    [
      { kind: 'product-user', orgId: 'org_1', appId: 'app_1', externalUserId: 'u' },
      'pu:["org_1","app_1","u"]',
    ],
  ];

  it.each(cases)('%o travels as %s and back', (invalidation, wire) => {
    expect(encodeInvalidation(invalidation)).toBe(wire);
    expect(decodeInvalidation(wire)).toEqual(invalidation);
  });

  it('does not understand what it does not know', () => {
    for (const wire of [
      '',
      'pu:not json',
      'pu:[1,2]',
      'pu:["only-one"]',
      'pu:["a","b","c","d"]',
      'something-new',
    ]) {
      expect(decodeInvalidation(wire)).toBeUndefined();
    }
  });
});
