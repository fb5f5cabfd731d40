import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonBody } from './parse-body.js';

const nestedText = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

describe('JSON nesting bound', () => {
  it('counts arrays and objects alike, scalars as no level', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
  });

  it('accepts 400 levels and refuses 401 with the spec’s 400 error', () => {
    const schema = z.unknown();
    expect(parseJsonBody(Buffer.from(nestedText(MAX_JSON_DEPTH)), schema)).not.toHaveProperty(
      'code',
    );
    expect(parseJsonBody(Buffer.from(nestedText(MAX_JSON_DEPTH + 1)), schema)).toMatchObject({
      code: 'gw_invalid_request',
      status: 400,
    });
  });

  it('refuses 100,000 levels without overflowing the stack', () => {
    const parsed = parseJsonBody(Buffer.from(nestedText(100_000)), z.unknown());
    expect(parsed).toMatchObject({ code: 'gw_invalid_request' });
  });
});
