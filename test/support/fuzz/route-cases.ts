// Turns the route table into hostile inputs: one mutation (or a few) of a valid request per
// input, chosen by the seeded generator.
import { refusedAmount, type FuzzCase } from './cases.js';
import { hostileTexts, pickHostile, setPath, toJson, type HostileText } from './hostile-values.js';
import type { Random } from './random.js';
import { encodeRequest, type HeaderValue } from './raw-http.js';
import {
  hostileParams,
  unroutedTargets,
  type DashboardSession,
  type FuzzTarget,
  type RouteSpec,
} from './route-specs.js';

type Headers = Array<readonly [string, HeaderValue]>;

interface Draft {
  method: string;
  /** The path with its parameters filled in (no query). */
  path: string;
  target: string;
  headers: Headers;
  body: Buffer | undefined;
  shape: string[];
  autoContentLength: boolean;
  /** The input breaks HTTP itself (control bytes in a header, an unknown method). */
  parserMayRefuse: boolean;
}

const OVER_LIMIT_BYTES = 4 * 1024 * 1024 + 16;

const BROWSER_HEADERS = new Set(['host', 'origin', 'cookie', 'x-csrf-token', 'authorization']);

/**
 * The session a route is sent with: the owner's, but for the routes that end sessions or
 * change a password, whose own sessions (of other users, or a spare one) they may end.
 */
function sessionOf(spec: RouteSpec, target: FuzzTarget): DashboardSession {
  const own: Readonly<Record<string, DashboardSession>> = {
    '/auth/logout': target.spareSession,
    '/auth/logout-everywhere': target.everywhereSession,
    '/auth/password': target.passwordSession,
  };
  return own[spec.path] ?? target.session;
}

function authHeaders(spec: RouteSpec, target: FuzzTarget): Headers {
  if (spec.auth === 'api') return [['authorization', `Bearer ${target.apiKey}`]];
  if (spec.auth === 'service') return [['authorization', `Bearer ${target.serviceKey}`]];
  const browser: Headers = [
    ['host', target.host],
    ['origin', target.origin],
  ];
  if (spec.auth === 'browser') return browser;
  if (spec.auth === 'none') return [];
  const session = sessionOf(spec, target);
  return [
    ...browser,
    ['cookie', session.cookie],
    ...(spec.method === 'GET' ? [] : [['x-csrf-token', session.csrfToken] as const]),
  ];
}

function renderPath(spec: RouteSpec, params: Record<string, string>): string {
  return spec.path.replace(/\{(\w+\*?)\}/g, (_, name: string) => params[name] ?? '');
}

function queryString(query: Record<string, string>): string {
  const text = new URLSearchParams(query).toString();
  return text === '' ? '' : `?${text}`;
}

/** A form body: each field's value as text (non-strings as their JSON). */
function toForm(body: Record<string, unknown>): string {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(body)) {
    form.append(name, typeof value === 'string' ? value : toJson(value));
  }
  return form.toString();
}

function encodeBody(spec: RouteSpec, body: Record<string, unknown>): Buffer {
  return Buffer.from(spec.form ? toForm(body) : toJson(body));
}

function decodeBody(spec: RouteSpec, body: Buffer): Record<string, unknown> {
  return spec.form
    ? Object.fromEntries(new URLSearchParams(body.toString('utf8')))
    : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);
}

function baseDraft(spec: RouteSpec, target: FuzzTarget, random: Random): Draft {
  const body = spec.body?.(target, random);
  let headers: Headers = [...authHeaders(spec, target)];
  // A route's own headers replace the browser's of the same name (a Host the issuer reads).
  for (const [name, value] of Object.entries(spec.headers?.(target, random) ?? {})) {
    if (value === undefined) continue;
    headers = [...headers.filter(([existing]) => existing !== name), [name, value]];
  }
  if (body) {
    headers.push([
      'content-type',
      spec.form ? 'application/x-www-form-urlencoded' : 'application/json',
    ]);
  }
  const path = renderPath(spec, spec.params?.(target) ?? {});
  return {
    method: spec.method,
    path,
    target: path + queryString(spec.query?.(target, random) ?? {}),
    headers,
    body: body ? encodeBody(spec, body) : undefined,
    shape: [],
    autoContentLength: true,
    parserMayRefuse: false,
  };
}

/** Session variants by name: what a browser, a forger or a script might send instead. */
function sessionVariants(spec: RouteSpec, target: FuzzTarget, random: Random): [string, Headers][] {
  // the route's own session: a variant that still authenticates must not end the owner's
  const { cookie, csrfToken } = sessionOf(spec, target);
  const [cookieName] = cookie.split('=');
  const host: readonly [string, string] = ['host', target.host];
  const origin: readonly [string, string] = ['origin', target.origin];
  const csrf: readonly [string, string] = ['x-csrf-token', csrfToken];
  return [
    ['session-missing-cookie', [host, origin, csrf]],
    [
      'session-unknown-cookie',
      [host, origin, csrf, ['cookie', `${cookieName}=${random.alnum(43)}`]],
    ],
    ['session-empty-cookie', [host, origin, csrf, ['cookie', `${cookieName}=`]]],
    [
      'session-cookie-nul-byte',
      [host, origin, csrf, ['cookie', Buffer.from(`${cookie}\u0000`, 'latin1')]],
    ],
    ['session-cookie-10k', [host, origin, csrf, ['cookie', `${cookieName}=${'c'.repeat(10_000)}`]]],
    [
      'session-duplicate-cookie-headers',
      [host, origin, csrf, ['cookie', `${cookieName}=${random.alnum(43)}`], ['cookie', cookie]],
    ],
    [
      'session-cookie-twice-in-one-header',
      [host, origin, csrf, ['cookie', `${cookie}; ${cookie}x`]],
    ],
    ['session-missing-csrf', [host, origin, ['cookie', cookie]]],
    ['session-wrong-csrf', [host, origin, ['cookie', cookie], ['x-csrf-token', random.alnum(32)]]],
    ['session-missing-origin', [host, csrf, ['cookie', cookie]]],
    [
      'session-foreign-origin',
      [host, csrf, ['cookie', cookie], ['origin', 'https://evil.example']],
    ],
    ['session-origin-null', [host, csrf, ['cookie', cookie], ['origin', 'null']]],
    ['session-foreign-host', [['host', 'evil.example'], origin, csrf, ['cookie', cookie]]],
    ['session-api-key-instead', [host, origin, ['authorization', `Bearer ${target.apiKey}`]]],
    ...(spec.method === 'GET'
      ? []
      : ([['session-get-only-token', [host, origin, ['cookie', cookie]]]] as [string, Headers][])),
  ];
}

/** Auth variants by name; `ownKey` is the key kind the route takes. */
function authVariants(spec: RouteSpec, target: FuzzTarget, random: Random): [string, Headers][] {
  if (spec.auth === 'session' || spec.auth === 'browser')
    return sessionVariants(spec, target, random);
  const own = spec.auth === 'service' ? target.serviceKey : target.apiKey;
  const other = spec.auth === 'service' ? target.apiKey : target.serviceKey;
  return [
    ['auth-missing', []],
    ['auth-empty-bearer', [['authorization', 'Bearer ']]],
    ['auth-basic-scheme', [['authorization', 'Basic Zm9vOmJhcg==']]],
    ['auth-lowercase-scheme', [['authorization', `bearer ${own}`]]],
    ['auth-malformed-key', [['authorization', 'Bearer gw_short']]],
    ['auth-unknown-api-key', [['authorization', `Bearer gw_${random.alnum(40)}`]]],
    ['auth-unknown-service-key', [['authorization', `Bearer gw_svc_${random.alnum(40)}`]]],
    ['auth-other-key-kind', [['authorization', `Bearer ${other}`]]],
    ['auth-revoked-api-key', [['authorization', `Bearer ${target.revokedApiKey}`]]],
    ['auth-trailing-junk', [['authorization', `Bearer ${own} junk`]]],
    [
      'auth-duplicate-valid-then-bad',
      [
        ['authorization', `Bearer ${own}`],
        ['authorization', 'Bearer gw_short'],
      ],
    ],
    [
      'auth-duplicate-bad-then-valid',
      [
        ['authorization', 'Bearer gw_short'],
        ['authorization', `Bearer ${own}`],
      ],
    ],
    ['auth-x-api-key', [['x-api-key', own]]],
    [
      'auth-x-api-key-conflicting-bearer',
      [
        ['x-api-key', own],
        ['authorization', `Bearer gw_${random.alnum(40)}`],
      ],
    ],
    ['auth-nul-byte', [['authorization', Buffer.from(`Bearer ${own}\u0000`, 'latin1')]]],
    ['auth-invalid-utf8', [['authorization', Buffer.from([0x42, 0xff, 0xfe, 0x20, 0x67])]]],
    ['auth-10k-token', [['authorization', `Bearer gw_${'A'.repeat(10_000)}`]]],
  ];
}

function wholeBodyVariants(valid: Buffer): [string, Buffer, number][] {
  const text = valid.toString('utf8');
  const withByte = (bytes: number[]): Buffer => {
    const at = text.indexOf('"', 2) + 1; // inside the first string value
    return Buffer.concat([valid.subarray(0, at), Buffer.from(bytes), valid.subarray(at)]);
  };
  return [
    ['body-empty', Buffer.alloc(0), 1],
    ['body-truncated-json', valid.subarray(0, Math.floor(valid.length / 2)), 1],
    ['body-open-brace', Buffer.from('{'), 1],
    ['body-null', Buffer.from('null'), 1],
    ['body-array', Buffer.from('[]'), 1],
    ['body-string', Buffer.from('"x"'), 1],
    ['body-number-1e999', Buffer.from('1e999'), 1],
    ['body-bom-prefixed', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), valid]), 1],
    ['body-trailing-garbage', Buffer.concat([valid, Buffer.from('}{"x":1}')]), 1],
    ['body-invalid-utf8-in-string', withByte([0xff, 0xfe]), 1],
    ['body-overlong-nul-utf8', withByte([0xc0, 0x80]), 1],
    ['body-utf16le', Buffer.from(text, 'utf16le'), 1],
    ['body-nested-array-10000', Buffer.from('['.repeat(10_000) + ']'.repeat(10_000)), 1],
    [
      'body-20000-keys',
      Buffer.from(`{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`),
      1,
    ],
    ['body-duplicate-keys', Buffer.from(`{"model":"x",${text.slice(1)}`), 1],
    ['body-form-urlencoded', Buffer.from('model=vendor_b%2Fgpt-4o-mini&messages=hi'), 1],
    ['body-over-limit', Buffer.alloc(OVER_LIMIT_BYTES, 0x20), 0.15],
  ];
}

const CONTENT_TYPES: readonly (readonly [string, Headers])[] = [
  ['content-type-missing', []],
  ['content-type-text-plain', [['content-type', 'text/plain']]],
  ['content-type-utf16-charset', [['content-type', 'application/json; charset=utf-16']]],
  ['content-type-multipart', [['content-type', 'multipart/form-data; boundary=x']]],
  ['content-type-form', [['content-type', 'application/x-www-form-urlencoded']]],
  [
    'content-type-duplicate',
    [
      ['content-type', 'application/json'],
      ['content-type', 'text/html'],
    ],
  ],
];

const GENERIC_HEADERS = [
  'x-gw-external-user-id',
  'vendor-version',
  'idempotency-key',
  'x-request-id',
  'accept',
  'user-agent',
  'accept-encoding',
];
/** Idempotency-Keys a create must refuse (400, nothing made), and the longest it takes. */
const hostileIdempotencyKeys: readonly HostileText[] = [
  ...hostileTexts,
  { name: 'key-255', header: 'k'.repeat(255), query: '' },
  { name: 'key-256', header: 'k'.repeat(256), query: '' },
  { name: 'key-tab', header: 'a\tb', query: '' },
  { name: 'key-del', header: Buffer.from('a\u007fb', 'latin1'), query: '' },
  { name: 'key-shared', header: 'fuzz-shared-a', query: '' },
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'FUZZ'];
const STANDARD_METHODS = new Set(METHODS.filter((method) => method !== 'FUZZ'));

function mutate(spec: RouteSpec, target: FuzzTarget, random: Random, draft: Draft): void {
  const kinds: [number, string][] = [
    [6, 'baseline'],
    [spec.fields ? 45 : 0, 'field'],
    [spec.query ? 30 : 0, 'query'],
    [spec.params ? 15 : 0, 'path-param'],
    [8, 'header'],
    [spec.idempotent ? 6 : 0, 'idempotency-key'],
    [10, 'auth'],
    [spec.body ? 10 : 2, 'whole-body'],
    [spec.body ? 4 : 0, 'content-type'],
    [5, 'method'],
  ];
  const kind = random.weighted(kinds.filter(([weight]) => weight > 0));
  switch (kind) {
    case 'baseline':
      draft.shape.push('valid');
      return;
    case 'field': {
      const body = decodeBody(spec, draft.body!);
      const count = random.weighted([
        [6, 1],
        [2, 2],
        [1, 3],
      ] as const);
      for (let index = 0; index < count; index += 1) {
        const spot = random.pick(spec.fields!);
        const hostile = pickHostile(random, spot.pool);
        setPath(body, spot.path, hostile.value);
        draft.shape.push(`${spot.path}=${hostile.name}`);
      }
      draft.body = encodeBody(spec, body);
      return;
    }
    case 'query': {
      const query = spec.query!(target, random);
      const names = [...Object.keys(query), 'currency', 'extra'];
      const name = random.pick(names);
      const hostile = random.pick(hostileTexts);
      const rest = Object.entries(query)
        .filter(([key]) => key !== name)
        .map(([key, value]) => `${key}=${encodeURIComponent(value)}`);
      const duplicate = random.chance(0.15)
        ? [`${name}=${encodeURIComponent(query[name] ?? 'x')}`]
        : [];
      draft.target = `${draft.path}?${[...rest, ...duplicate, `${name}=${hostile.query}`].join('&')}`;
      draft.shape.push(`query ${name}=${hostile.name}${duplicate.length ? ' (duplicated)' : ''}`);
      return;
    }
    case 'path-param': {
      const params = spec.params!(target);
      const name = random.pick(Object.keys(params));
      const hostile = random.pick(hostileParams);
      draft.path = renderPath(spec, { ...params, [name]: hostile.value });
      draft.target = draft.path;
      draft.shape.push(`path ${name}=${hostile.name}`);
      return;
    }
    case 'header': {
      const name = random.pick(GENERIC_HEADERS);
      const hostile = random.pick(hostileTexts);
      draft.headers = draft.headers.filter(([existing]) => existing !== name);
      draft.headers.push([name, hostile.header]);
      draft.shape.push(`header ${name}=${hostile.name}`);
      draft.parserMayRefuse = hostile.controlBytes === true;
      return;
    }
    case 'idempotency-key': {
      const hostile = random.pick(hostileIdempotencyKeys);
      draft.headers = draft.headers.filter(([existing]) => existing !== 'idempotency-key');
      draft.headers.push(['idempotency-key', hostile.header]);
      draft.shape.push(`idempotency-key=${hostile.name}`);
      draft.parserMayRefuse = hostile.controlBytes === true;
      return;
    }
    case 'auth': {
      const [name, headers] = random.pick(authVariants(spec, target, random));
      draft.headers = [
        ...draft.headers.filter(([existing]) => !BROWSER_HEADERS.has(existing)),
        ...headers,
      ];
      draft.shape.push(name);
      draft.parserMayRefuse = name.endsWith('nul-byte');
      return;
    }
    case 'whole-body': {
      const valid = draft.body ?? Buffer.from('{"a":1}');
      const [name, body] = random.weighted(
        wholeBodyVariants(valid).map(
          ([variant, bytes, weight]) => [weight, [variant, bytes]] as const,
        ),
      );
      draft.body = body;
      if (!spec.body) draft.headers.push(['content-type', 'application/json']);
      draft.shape.push(name);
      // The 413 comes before the body is read; the connection may be reset mid-upload.
      draft.parserMayRefuse = name === 'body-over-limit';
      return;
    }
    case 'content-type': {
      const [name, headers] = random.pick(CONTENT_TYPES);
      draft.headers = [
        ...draft.headers.filter(([existing]) => existing !== 'content-type'),
        ...headers,
      ];
      draft.shape.push(name);
      return;
    }
    case 'method': {
      const method = random.pick(METHODS.filter((candidate) => candidate !== spec.method));
      draft.method = method;
      draft.shape.push(`method ${method}`);
      draft.parserMayRefuse = !STANDARD_METHODS.has(method);
      return;
    }
  }
}

export function routeCase(spec: RouteSpec, target: FuzzTarget, random: Random): FuzzCase {
  const draft = baseDraft(spec, target, random);
  mutate(spec, target, random, draft);
  const shape = draft.shape.join(' + ');
  const amountOnly = /^amount=amount-(1e18-dollars|int64-nano-plus|as-1e18-number)$/.test(shape);
  return {
    route: `${spec.method} ${spec.path}`,
    shape,
    payload: encodeRequest(draft),
    headRequest: draft.method === 'HEAD',
    mayClose: draft.parserMayRefuse,
    ...(amountOnly && { expectation: refusedAmount }),
  };
}

export function unroutedCase(target: FuzzTarget, random: Random): FuzzCase {
  const path = random.pick(unroutedTargets);
  const method = random.pick(METHODS);
  const withKey = random.chance(0.5);
  return {
    route: 'unrouted',
    shape: `${method} ${path.name}${withKey ? ' with api key' : ''}`,
    payload: encodeRequest({
      method,
      target: path.target,
      headers: withKey ? [['authorization', `Bearer ${target.apiKey}`]] : [],
      ...(method === 'POST' && { body: Buffer.from('{}') }),
    }),
    headRequest: method === 'HEAD',
    // uWS may refuse request targets it cannot parse by closing the connection.
    mayClose:
      !STANDARD_METHODS.has(method) ||
      path.target === '*' ||
      path.target.startsWith('http') ||
      path.target.startsWith('?'),
  };
}
