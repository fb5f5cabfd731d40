import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { isGwError } from '../../errors.js';
import { parsePage, parseQuery, queryParameters } from './query.js';

describe('query parameters', () => {
  it('reads each name once, decoded', () => {
    expect(queryParameters('a=1&b=x%20y&c=')).toEqual({ a: '1', b: 'x y', c: '' });
  });

  it('refuses a name given twice, whichever the values', () => {
    for (const query of ['user=alice&user=bob', 'limit=1&limit=1', 'a=1&b=2&a=']) {
      const refused = queryParameters(query);
      expect(isGwError(refused) && refused.code).toBe('gw_invalid_request');
      expect(isGwError(refused) && refused.message).toMatch(/^query parameter "\w+": given twice$/);
    }
    const page = parsePage('limit=1&limit=50');
    expect(isGwError(page) && page.message).toBe('query parameter "limit": given twice');
  });

  it('keeps names that are Object.prototype members as plain data', () => {
    const parsed = queryParameters('__proto__=x&constructor=y');
    expect(parsed).toEqual({ ['__proto__']: 'x', constructor: 'y' });
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    const schema = z.strictObject({ constructor: z.string() });
    expect(isGwError(parseQuery('__proto__=x&constructor=y', schema))).toBe(true);
  });
});
