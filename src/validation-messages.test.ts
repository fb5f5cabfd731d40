// The one formatter of validation issues, as configuration, query strings and CLI options see it.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, loadConfig } from './config.js';
import { pageQuerySchema } from './db/pages.js';
import { parseQuery } from './routes/framework/query.js';
import { routeDeclarations } from './routes/index.js';
import { describeAllIssues, describeFirstIssue } from './validation-messages.js';

function configMessage(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('configuration errors', () => {
  it('name the variable and the rule, never the validator text', () => {
    expect(configMessage({ PORT: 'abc' })).toBe(
      'invalid configuration:\n  PORT: must be a whole number, written with digits only',
    );
    // What Number() would read, written otherwise, is refused: not taken as 20, 10 or 5.
    for (const written of ['0x14', '1e1', ' 5', '20.5', '-1']) {
      expect(configMessage({ HEAP_GROWTH_PERCENT: written }), written).toBe(
        'invalid configuration:\n  HEAP_GROWTH_PERCENT: must be a whole number, written with digits only',
      );
    }
    expect(configMessage({ REQUEST_LOG_SAMPLE_RATE: '1e-1' })).toBe(
      'invalid configuration:\n  REQUEST_LOG_SAMPLE_RATE: must be a decimal number such as 0.25',
    );
    expect(configMessage({ PORT: '70000', TOKEN_WORKERS: '0', LOG_LEVEL: 'loud' })).toBe(
      [
        'invalid configuration:',
        '  PORT: must be at most 65535',
        '  TOKEN_WORKERS: must be at least 1',
        '  LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
      ].join('\n'),
    );
    expect(configMessage({ REDIS_URL: 'not a url' })).toBe(
      'invalid configuration:\n  REDIS_URL: must be a URL',
    );
    // A setting gw gives every Postgres session itself, which pg would let the URL override.
    expect(
      configMessage({
        DATABASE_URL: 'postgres://u@db:5432/gw?sslmode=require&statement_timeout=0',
      }),
    ).toBe(
      'invalid configuration:\n  DATABASE_URL: must not set statement_timeout: gw sets it on every connection itself (DATABASE_TIMEOUT_MS bounds statements; each pool names itself)',
    );
  });
});

describe('DASHBOARD_ALLOWED_ORIGINS (decision 354)', () => {
  it('normalises each entry as a browser writes its Origin, and drops repeats', () => {
    const config = loadConfig({
      DASHBOARD_ALLOWED_ORIGINS:
        ' HTTPS://Partner.Example:443/ , http://LOCALHOST:80,https://partner.example,http://[::1]:5173/',
    });
    expect(config.DASHBOARD_ALLOWED_ORIGINS).toEqual([
      'https://partner.example',
      'http://localhost',
      'http://[::1]:5173',
    ]);
    expect(loadConfig({}).DASHBOARD_ALLOWED_ORIGINS).toEqual([]);
  });

  it('refuses at startup an entry that is not an origin, by position, never its value', () => {
    for (const entry of [
      'https://app.example/dashboard',
      'app.example',
      'ftp://app.example',
      'https://user@app.example',
      'https://app.example?x=1',
      'https://*.example',
      'null',
      'https://app.example:99999',
    ]) {
      const message = configMessage({
        DASHBOARD_ALLOWED_ORIGINS: `https://ok.example, ${entry}`,
      });
      expect(message, entry).toBe(
        'invalid configuration:\n  DASHBOARD_ALLOWED_ORIGINS: entry 2 of 2 is not an origin: each must be scheme://host[:port] only (http or https, no path, query, user or wildcard)',
      );
    }
  });
});

describe('configuration values', () => {
  it('set to nothing take their default, not the 0 or "" an empty string parses to', () => {
    const config = loadConfig({ HEAP_GROWTH_PERCENT: '', PORT: ' ', REQUEST_LOG_SAMPLE_RATE: '' });
    expect([config.HEAP_GROWTH_PERCENT, config.PORT, config.REQUEST_LOG_SAMPLE_RATE]).toEqual([
      20, 8080, 1,
    ]);
    expect(loadConfig({ HEAP_GROWTH_PERCENT: '0', REQUEST_LOG_SAMPLE_RATE: '0.25' })).toMatchObject(
      { HEAP_GROWTH_PERCENT: 0, REQUEST_LOG_SAMPLE_RATE: 0.25 },
    );
  });
});

describe('query parameters', () => {
  it('keep the schema’s own words and name the parameter', () => {
    expect(parseQuery('limit=0', pageQuerySchema)).toMatchObject({
      code: 'gw_invalid_request',
      message: 'limit: must be at least 1',
    });
    expect(parseQuery('limit=201', pageQuerySchema)).toMatchObject({
      message: 'limit: must be at most 200',
    });
  });

  it('read a number only when it is written with digits (decision 302)', () => {
    expect(parseQuery('limit=5', pageQuerySchema)).toEqual({ limit: 5 });
    expect(parseQuery('', pageQuerySchema)).toEqual({ limit: 50 });
    // What Number() would read as 100, 16, 5 and 5, and what it reads as 0, are refused.
    for (const written of ['1e2', '0x10', '%205', '5%20', '5.0', '-5', '+5', '', 'abc']) {
      expect(parseQuery(`limit=${written}`, pageQuerySchema), written).toMatchObject({
        code: 'gw_invalid_request',
        status: 400,
        message: 'limit: must be a whole number, written with digits only',
      });
    }
  });

  // Every route's query parameters: no schema reads a number as Number() would.
  const numericParameters = routeDeclarations.flatMap((route) =>
    Object.keys(route.query?.shape ?? {})
      .filter((name) => route.query!.safeParse({ [name]: '7' }).data?.[name] === 7)
      .map((name) => [`${route.method} ${route.path}`, name, route.query!] as const),
  );
  it('finds the routes that take a number (the check below can fail)', () => {
    expect(numericParameters.map(([route, name]) => `${route} ${name}`)).toEqual(
      expect.arrayContaining([
        'GET /dashboard/api/orgs/{org_id}/audit-log limit',
        'GET /dashboard/api/orgs/{org_id}/usage limit',
        'GET /dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/deliveries limit',
        'GET /dashboard/api/orgs/{org_id}/connections limit',
      ]),
    );
  });
  it.each(numericParameters)('%s reads %s with digits only', (_, name, schema) => {
    for (const written of ['1e2', '0x10', '%205', '5.0']) {
      expect(parseQuery(`${name}=${written}`, schema), written).toMatchObject({
        code: 'gw_invalid_request',
        message: `${name}: must be a whole number, written with digits only`,
      });
    }
  });
});

describe('the rules in plain words', () => {
  const schema = z.strictObject({
    name: z.string().min(1),
    tags: z.array(z.string()).max(2),
    count: z.number().int().positive(),
    ratio: z.number().lt(1),
    at: z.iso.datetime({ offset: true }),
  });
  it.each([
    [{ name: '' }, 'name: must not be empty'],
    [{ name: 'a', tags: ['a', 'b', 'c'] }, 'tags: must have at most 2 items'],
    [{ name: 'a', tags: [], count: 0 }, 'count: must be more than 0'],
    [{ name: 'a', tags: [], count: 1, ratio: 1 }, 'ratio: must be less than 1'],
    [
      { name: 'a', tags: [], count: 1, ratio: 0, at: 'soon' },
      'at: must be an RFC 3339 timestamp with an offset, such as 2030-01-31T00:00:00Z',
    ],
    [
      { name: 'a', tags: [], count: 1, ratio: 0, at: '2030-01-01T00:00:00Z', x: 1 },
      'body: unknown field x',
    ],
  ])('%j → %s', (input, message) => {
    const result = schema.safeParse(input);
    expect(result.success).toBe(false);
    expect(describeFirstIssue(result.error!, 'body')).toBe(message);
  });

  it('calls a record an object', () => {
    const result = z.object({ metadata: z.record(z.string(), z.unknown()) }).safeParse({
      metadata: 'x',
    });
    expect(describeFirstIssue(result.error!, 'body')).toBe('metadata: must be an object');
  });

  it('lists every issue when asked', () => {
    const result = schema.safeParse({});
    expect(describeAllIssues(result.error!, 'body').slice(0, 2)).toEqual([
      'name: is required',
      'tags: is required',
    ]);
  });
});

describe('names from the input', () => {
  it('are quoted only as short plain identifiers', () => {
    const schema = z.strictObject({ a: z.record(z.string(), z.number()) });
    const unknown = schema.safeParse({ a: {}, ok_name: 1, 'bad\nname': 2, ['k'.repeat(65)]: 3 });
    expect(describeFirstIssue(unknown.error!, 'body')).toBe(
      'body: unknown fields ok_name, 2 fields whose names are not shown',
    );
    const inRecord = schema.safeParse({ a: { '\u001b[31m': 'x' } });
    expect(describeFirstIssue(inRecord.error!, 'body')).toBe('a.(a field): must be a number');
  });
});
