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

  it('refuses a name the route does not declare, naming those it does', () => {
    const declared = z.object({ app_id: z.string(), q: z.string().optional() });
    expect(queryParameters('app_id=a&q=b', declared)).toEqual({ app_id: 'a', q: 'b' });
    const refused = parseQuery('app_id=a&status=blocked', declared);
    expect(isGwError(refused) && [refused.code, refused.message]).toEqual([
      'gw_invalid_request',
      'query parameter "status": not one this route takes (app_id, q)',
    ]);
    const long = queryParameters(`${'n'.repeat(500)}=1`, declared);
    expect(isGwError(long) && long.message).toBe(
      `query parameter "${'n'.repeat(64)}…": not one this route takes (app_id, q)`,
    );
    // Names of Object.prototype are not declared ones.
    expect(isGwError(queryParameters('constructor=x', declared))).toBe(true);
    // Without a declaration (a route that reads its own parameters), any name is read.
    expect(queryParameters('anything=1')).toEqual({ anything: '1' });
  });

  it('keeps names that are Object.prototype members as plain data', () => {
    const parsed = queryParameters('__proto__=x&constructor=y');
    expect(parsed).toEqual({ ['__proto__']: 'x', constructor: 'y' });
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    const schema = z.strictObject({ constructor: z.string() });
    expect(isGwError(parseQuery('__proto__=x&constructor=y', schema))).toBe(true);
  });
});
