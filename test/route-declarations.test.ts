// Adding a route is adding one declaration: the router, the auth step, body validation and
// /openapi.json all follow from it. Shown with a route that exists only in this test, served
// in-process by the real HTTP adapter (uWS) with fake authenticators (ports, not our Redis or
// Postgres: authentication itself is tested end to end in auth.e2e.test.ts).
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApiKeyIdentity } from '../src/auth/api-key-store.js';
import { errorCatalogue, gwError, type ErrorCode } from '../src/errors.js';
import { createHttpServer, type HttpServer } from '../src/http/server.js';
import { createLogger } from '../src/log.js';
import { buildOpenApiDocument, documentedPath } from '../src/openapi/document.js';
import { bindRoutes } from '../src/routes/framework/bind.js';
import {
  answer,
  declareRoute,
  routeErrorCodes,
  type Authenticators,
} from '../src/routes/framework/declaration.js';
import { routeDeclarations } from '../src/routes/index.js';
import { collected } from './support/collectable.js';
import { wholeNumberOr } from '../src/written-numbers.js';
import { getJson, postJson } from './support/http.js';
import { resolveRef } from './support/openapi-check.js';
import { rawRequest } from './support/raw-http.js';

interface OpenApiParameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
}
interface OpenApiOperation {
  readonly operationId?: string;
  readonly security?: Array<Record<string, string[]>>;
  readonly parameters?: OpenApiParameter[];
  readonly responses: Record<
    string,
    {
      description: string;
      content?: Record<string, { schema: Record<string, unknown> }>;
    }
  >;
}

const GOOD_KEY = `gw_${'a'.repeat(40)}`;
const identity: ApiKeyIdentity = {
  keyId: 'key_test',
  orgId: 'org_test',
  appId: 'app_test',
  appConnectionId: 'conn_test',
  active: true,
  modelPolicy: ['*'],
  requiresProductUser: false,
  creditMode: 'enforce',
  overrunPolicy: 'limit_output',
};

/** The one file a new route would be: this declaration. */
const echoRoute = declareRoute({
  method: 'POST',
  path: '/v1/echo',
  summary: 'Echoes a word back to the authenticated key',
  caller: { kind: 'api_key' },
  body: z.strictObject({ word: z.string().max(10) }),
  responses: { 200: { description: 'the word', schema: z.object({ word: z.string() }) } },
  errors: ['gw_model_not_allowed'],
  handler({ caller, body }, deps: { readonly suffix: string }) {
    // A refusal is returned (or thrown, from anywhere below the handler) as a GwError.
    if (body.word === 'no') return gwError('gw_model_not_allowed', 'returned refusal');
    if (body.word === 'throw') throw gwError('gw_model_not_allowed', 'thrown refusal');
    if (body.word === 'new') return answer(201, { created: true });
    return { word: `${body.word}${deps.suffix}`, key_id: caller.keyId };
  },
});

/** A form-encoded route whose caller authenticates with its body (as OAuth clients do). */
const formRoute = declareRoute({
  method: 'POST',
  path: '/v1/form-echo',
  summary: 'Echoes a form field back to the client that sent it',
  caller: { kind: 'oauth_client' },
  body: z.object({ word: z.string().max(10), client_id: z.string().optional() }),
  bodyEncoding: 'form',
  responses: { 200: { description: 'the word' } },
  errors: [],
  handler({ caller, body }) {
    return { word: body.word, client: caller.clientId };
  },
});

/** A route with path parameters: the handler gets them typed from the path. */
const paramRoute = declareRoute({
  method: 'GET',
  path: '/v1/shelves/{shelf_id}/books/{book_id}',
  summary: 'Names a book on a shelf',
  caller: { kind: 'api_key' },
  responses: { 200: { description: 'the ids' } },
  handler({ params }) {
    const ids: { shelf: string; book: string } = { shelf: params.shelf_id, book: params.book_id };
    // @ts-expect-error: `author_id` is not a parameter of this path (checked by the typecheck)
    void params.author_id;
    return ids;
  },
});

/**
 * A session route whose CSRF token comes in its form body, served for GET (and so HEAD) and
 * POST. None of the gateway's own is a GET (its one is POST /oauth/authorize, and a HEAD there
 * is answered by GET /oauth/authorize, another route): declared here to hold the rule that
 * the body's CSRF check, like the header's, exempts exactly the methods that are not writes.
 */
const formNoteRead = declareRoute({
  method: 'GET',
  path: '/v1/form-note',
  summary: 'Echoes a form field back to the signed-in user',
  caller: { kind: 'session', csrf: 'form' },
  body: z.object({ note: z.string().max(20), csrf_token: z.string().optional() }),
  bodyEncoding: 'form',
  responses: { 200: { description: 'the note' } },
  errors: [],
  handler({ caller, body }) {
    return { note: body.note, user: caller.user.id };
  },
});
const formNoteWrite = declareRoute({ ...formNoteRead, method: 'POST' });
const SESSION_COOKIE = 'session=test-session';
const SESSION_CSRF = 'csrf-of-test-session';

/** What the hold route's handler kept while it runs, and how to let it answer. */
let held: { rawBodyBytes: number; body: WeakRef<object>; release: () => void } | undefined;

/** A handler that outlives its request's parsing, as a stream's does (for minutes). */
const holdRoute = declareRoute({
  method: 'POST',
  path: '/v1/hold',
  summary: 'Holds the request open until the test lets it answer',
  caller: { kind: 'api_key' },
  body: z.strictObject({ text: z.string() }),
  responses: { 200: { description: 'released' } },
  errors: [],
  handler(call) {
    // Read here, outside the closures below: they must not capture `call`.
    const rawBodyBytes = call.request.body.length;
    const body = new WeakRef(call.body);
    let release!: () => void;
    const released = new Promise((resolve) => {
      release = () => resolve({ released: true });
    });
    held = { rawBodyBytes, body, release };
    return released;
  },
});

/** How many times the shelf route's handler ran: a refused query must not run it. */
let shelfHandlerRuns = 0;

/** A route that declares its query: the router parses it, and the handler gets it typed. */
const shelfRoute = declareRoute({
  method: 'GET',
  path: '/v1/shelf',
  summary: 'Lists the books of an app, filtered',
  caller: { kind: 'api_key' },
  query: z.object({
    app_id: z.string(),
    genre: z.enum(['poetry', 'prose']).optional(),
    limit: wholeNumberOr(10, { min: 1, max: 50 }),
  }),
  // A missing app_id answers the spec's own code, as a body's would (bodyFieldErrors).
  queryFieldErrors: { app_id: 'gw_invalid_app_id' },
  responses: { 200: { description: 'the query as the handler got it' } },
  handler({ query }) {
    shelfHandlerRuns += 1;
    const typed: { app_id: string; genre?: 'poetry' | 'prose'; limit: number } = query;
    // @ts-expect-error: `author` is not a declared parameter (checked by the typecheck)
    void query.author;
    return { query: typed };
  },
});

/** A route that ignores parameters it does not declare: its handler reads the query itself. */
const openQueryRoute = declareRoute({
  method: 'GET',
  path: '/v1/open-query',
  summary: 'Echoes its raw query string',
  caller: { kind: 'api_key' },
  query: z.object({ word: z.string() }),
  unknownQueryParameters: 'ignored',
  responses: { 200: { description: 'the raw query' } },
  handler({ request, query }) {
    const notParsed: undefined = query;
    return { raw: request.query, parsed: notParsed ?? null };
  },
});

let authCalls = 0;
const authenticators: Authenticators = {
  apiKey: (headers) => {
    authCalls += 1;
    const ok = headers.authorization === `Bearer ${GOOD_KEY}`;
    return Promise.resolve(ok ? identity : gwError('gw_unknown_key', 'unknown API key'));
  },
  serviceKey: () =>
    Promise.resolve(gwError('gw_malformed_or_missing_service_key', 'missing service key')),
  session: (head) =>
    Promise.resolve(
      head.headers.cookie === SESSION_COOKIE
        ? {
            user: {
              id: 'user_test',
              email: 'u@gw.test',
              personalOrgId: 'org_test',
              memberships: [],
              sessionEpoch: 0,
              emailVerified: true,
              reviewAfterResetAt: null,
            },
            session: {
              handle: 'h',
              userId: 'user_test',
              csrfToken: SESSION_CSRF,
              createdAtMs: 0,
              epoch: 0,
            },
            actor: { userId: 'user_test' },
          }
        : gwError('gw_session_required', 'no session'),
    ),
  orgMember: () => Promise.resolve(gwError('gw_session_required', 'no session')),
  dashboardVisitor: (head) =>
    Promise.resolve(
      head.headers.origin === 'https://gw.test'
        ? null
        : gwError('gw_origin_not_allowed', 'foreign origin'),
    ),
  oauthClient: (_headers, form) =>
    Promise.resolve(
      form.client_id === 'gw_client_test'
        ? { clientId: 'gw_client_test', appId: 'app_test', orgId: 'org_test', confidential: false }
        : gwError('gw_oauth_invalid_client', 'unknown client'),
    ),
};

let server: HttpServer;
let base: string;
let port: number;

beforeAll(async () => {
  server = createHttpServer({
    maxBodyBytes: 4 * 1024 * 1024,
    logger: createLogger('silent'),
    routes: bindRoutes(
      [
        echoRoute,
        formRoute,
        holdRoute,
        paramRoute,
        formNoteRead,
        formNoteWrite,
        shelfRoute,
        openQueryRoute,
      ],
      { suffix: '!' },
      authenticators,
    ),
  });
  port = await server.listen('127.0.0.1', 0);
  base = `http://127.0.0.1:${port}`;
});
afterAll(() => server.stopAccepting());

describe('a route declared in one place', () => {
  it('is routed, and its handler gets the authenticated caller and the validated body', async () => {
    const answer = await postJson(
      `${base}/v1/echo`,
      { word: 'hi' },
      { authorization: `Bearer ${GOOD_KEY}` },
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ word: 'hi!', key_id: 'key_test' });
  });

  it('answers what its handler returns or throws: a body, a body with its own status, a GwError', async () => {
    const post = (word: string) =>
      postJson(`${base}/v1/echo`, { word }, { authorization: `Bearer ${GOOD_KEY}` });
    const created = await post('new');
    expect([created.status, created.body]).toEqual([201, { created: true }]);
    expect(created.headers.get('content-type')).toBe('application/json');
    for (const [word, message] of [
      ['no', 'returned refusal'],
      ['throw', 'thrown refusal'],
    ] as const) {
      const refused = await post(word);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: { code: 'gw_model_not_allowed', message } });
    }
  });

  it('gets its path parameters, decoded, by the names its path gives them', async () => {
    const response = await fetch(`${base}/v1/shelves/s%201/books/b-2`, {
      headers: { authorization: `Bearer ${GOOD_KEY}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ shelf: 's 1', book: 'b-2' });
  });

  it('is authenticated by its caller kind before its handler runs', async () => {
    const answer = await postJson(`${base}/v1/echo`, { word: 'hi' }, { authorization: 'Bearer x' });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ error: { code: 'gw_unknown_key', message: 'unknown API key' } });
  });

  it('validates its body against the declared schema', async () => {
    const answer = await postJson(
      `${base}/v1/echo`,
      { word: 'far too long a word' },
      { authorization: `Bearer ${GOOD_KEY}` },
    );
    expect(answer.status).toBe(400);
    expect((answer.body.error as { code: string }).code).toBe('gw_invalid_request');
  });

  it('refuses an unauthenticated request without reading its body', async () => {
    // 3 MB announced, 1 KB sent: the refusal must come before the rest of the body.
    const socket = connect(port, '127.0.0.1');
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
      socket.write(
        [
          'POST /v1/echo HTTP/1.1',
          'host: 127.0.0.1',
          'authorization: Bearer wrong',
          'content-type: application/json',
          `content-length: ${3 * 1024 * 1024}`,
          '',
          '',
        ].join('\r\n') + 'x'.repeat(1024),
      );
      setTimeout(() => {
        socket.destroy();
        resolve(text);
      }, 5_000);
    });
    expect(answer.startsWith('HTTP/1.1 401')).toBe(true);
    expect(answer).toContain('"code":"gw_unknown_key"');
  });

  it('is in /openapi.json with its security, body, response and every error it can answer', () => {
    const document = buildOpenApiDocument([echoRoute]) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    const operation = document.paths['/v1/echo']!.post!;
    // An API key is sent as a bearer token or in x-api-key.
    expect(operation.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
    expect(operation.requestBody).toBeDefined();
    const responses = operation.responses as Record<string, { description: string }>;
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '403', '413', '503']);
    expect(responses['401']!.description).toContain('gw_unknown_key');
    expect(responses['400']!.description).toContain('gw_invalid_json');
    expect(responses['403']!.description).toContain('gw_model_not_allowed');
  });
});

describe('a route that declares its query', () => {
  const get = (query: string, path = '/v1/shelf') =>
    getJson<Record<string, unknown> & { error?: { code: string; message: string } }>(
      `${base}${path}?${query}`,
      { authorization: `Bearer ${GOOD_KEY}` },
    );

  it('gets its query parsed and typed, defaults filled in', async () => {
    const answer = await get('app_id=app_1&genre=poetry&limit=5');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ query: { app_id: 'app_1', genre: 'poetry', limit: 5 } });
    expect((await get('app_id=app_1')).body).toEqual({ query: { app_id: 'app_1', limit: 10 } });
  });

  it('is refused a name it does not declare, a name given twice or a bad value, without its handler running', async () => {
    const runs = shelfHandlerRuns;
    for (const [query, code, message] of [
      [
        'app_id=app_1&author=x',
        'gw_invalid_request',
        'query parameter "author": not one this route takes (app_id, genre, limit)',
      ],
      [
        'app_id=app_1&limit=5&limit=6',
        'gw_invalid_request',
        'query parameter "limit": given twice',
      ],
      ['app_id=app_1&genre=drama', 'gw_invalid_request', 'genre: must be one of poetry, prose'],
      // A parameter the declaration gives its own code answers it.
      ['genre=poetry', 'gw_invalid_app_id', 'app_id: is required'],
    ] as const) {
      const refused = await get(query);
      expect([refused.status, refused.body.error], query).toEqual([400, { code, message }]);
    }
    expect(shelfHandlerRuns).toBe(runs);
  });

  it('declared to ignore unknown names, leaves its query string to its handler', async () => {
    const answer = await get('word=a&word=b&api-version=1', '/v1/open-query');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ raw: 'word=a&word=b&api-version=1', parsed: null });
  });

  it('is in /openapi.json with its parameters, its field codes, and whether unknown names are ignored', () => {
    const document = buildOpenApiDocument([shelfRoute, openQueryRoute, ...routeDeclarations]) as {
      paths: Record<
        string,
        Record<
          string,
          {
            description?: string;
            parameters?: OpenApiParameter[];
            responses: Record<string, { description: string }>;
          }
        >
      >;
    };
    const queryNames = (operation: { parameters?: OpenApiParameter[] }) =>
      (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    const shelf = document.paths['/v1/shelf']!.get!;
    expect(queryNames(shelf)).toEqual(['app_id', 'genre', 'limit']);
    expect(shelf.parameters!.find((p) => p.name === 'app_id')!.required).toBe(true);
    expect(shelf.responses['400']!.description).toContain('gw_invalid_app_id');
    expect(shelf.description).toBeUndefined();
    const ignoring = 'Query parameters this operation does not list are ignored.';
    expect(document.paths['/v1/open-query']!.get!.description).toBe(ignoring);
    // The gateway's own: OAuth's authorization endpoint documents what it reads, and says it
    // ignores the rest (RFC 6749 section 3.1); so do the inference routes.
    const authorize = document.paths['/oauth/authorize']!.get!;
    expect(queryNames(authorize).sort()).toEqual(
      [
        'client_id',
        'code_challenge',
        'code_challenge_method',
        'redirect_uri',
        'response_type',
        'state',
      ].sort(),
    );
    expect(authorize.description).toBe(ignoring);
    expect(document.paths['/v1/chat/completions']!.post!.description).toBe(ignoring);
    expect(document.paths['/dashboard/api/orgs/{org_id}/audit-log']!.get!.description).toBe(
      undefined,
    );
  });

  it('cannot map a field to its own code when the router does not parse the query', () => {
    const broken = declareRoute({
      ...openQueryRoute,
      queryFieldErrors: { word: 'gw_invalid_app_id' },
    });
    expect(() => bindRoutes([broken], {}, authenticators)).toThrow(/query field errors/);
  });
});

describe('a request whose handler is still running', () => {
  it('is no longer kept by the router: neither its raw body nor its parsed body', async () => {
    const pending = postJson(
      `${base}/v1/hold`,
      { text: 'a long prompt '.repeat(2_000) },
      { authorization: `Bearer ${GOOD_KEY}` },
    );
    while (!held) await new Promise((resolve) => setTimeout(resolve, 5));
    // Released once parsed: the handler already sees an empty raw body.
    expect(held.rawBodyBytes).toBe(0);
    // The handler did not keep it, and nothing in the router does while the handler runs.
    expect(await collected(held.body)).toBe(true);
    held.release();
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ released: true });
  });
});

describe('a form-encoded route', () => {
  const post = (body: string, contentType = 'application/x-www-form-urlencoded') =>
    fetch(`${base}/v1/form-echo`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    }).then(async (response) => ({ status: response.status, body: await response.json() }));

  it('reads the form, authenticates its caller from it, and validates it against the schema', async () => {
    expect(await post('word=hi%21&client_id=gw_client_test')).toEqual({
      status: 200,
      body: { word: 'hi!', client: 'gw_client_test' },
    });
    const unknown = await post('word=hi&client_id=gw_client_other');
    expect(unknown.status).toBe(401);
    const tooLong = await post('word=far+too+long+a+word&client_id=gw_client_test');
    expect(tooLong.status).toBe(400);
  });

  it('refuses another content type, a parameter sent twice and NUL characters, before authenticating', async () => {
    for (const [body, type, message] of [
      [
        '{"word":"hi"}',
        'application/json',
        /content-type: must be application\/x-www-form-urlencoded/,
      ],
      ['word=a&word=b&client_id=gw_client_test', undefined, /word: must be sent once/],
      ['word=a%00&client_id=gw_client_test', undefined, /word: must not contain a NUL/],
    ] as const) {
      const answer = await post(body, type);
      expect(answer.status).toBe(400);
      expect((answer.body as { error: { message: string } }).error.message).toMatch(message);
    }
  });

  it('cannot be declared with a caller whose credentials need a form but a JSON body', () => {
    const broken = declareRoute({ ...formRoute, bodyEncoding: 'json' });
    expect(() => bindRoutes([broken], {}, authenticators)).toThrow(/form body/);
  });
});

describe('a session route with its CSRF token in the form', () => {
  /** One request with a form body, over a socket (fetch sends no body with GET or HEAD). */
  const send = (method: string, form: string) =>
    rawRequest(
      port,
      [
        `${method} /v1/form-note HTTP/1.1`,
        'host: 127.0.0.1',
        `cookie: ${SESSION_COOKIE}`,
        'content-type: application/x-www-form-urlencoded',
        `content-length: ${Buffer.byteLength(form)}`,
      ].join('\r\n'),
      form,
    );

  it('answers a HEAD as its GET, without the CSRF token a write needs', async () => {
    const get = await send('GET', 'note=hello');
    expect(get.status).toBe(200);
    expect(JSON.parse(get.body)).toEqual({ note: 'hello', user: 'user_test' });
    const head = await send('HEAD', 'note=hello');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.head).toMatch(
      new RegExp(`content-length: ${Buffer.byteLength(get.body)}\\r?$`, 'im'),
    );
  });

  it("refuses a write without the session's CSRF token in the form, and serves it with it", async () => {
    for (const form of ['note=hello', 'note=hello&csrf_token=not-the-token']) {
      const refused = await send('POST', form);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error.code).toBe('gw_csrf_token_invalid');
    }
    const served = await send('POST', `note=hello&csrf_token=${SESSION_CSRF}`);
    expect(served.status).toBe(200);
    expect(JSON.parse(served.body)).toEqual({ note: 'hello', user: 'user_test' });
  });
});

describe('the gateway route table', () => {
  it('declares each method and path once', () => {
    const keys = routeDeclarations.map((route) => `${route.method} ${route.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('sends every answer that holds a secret with Cache-Control: no-store (it declares so)', () => {
    const secretFields = [
      'secret',
      'key',
      'client_secret',
      'access_token',
      'csrf_token',
      'accept_token',
    ];
    const holdsSecret = (schema: z.ZodType | undefined): boolean =>
      schema instanceof z.ZodObject &&
      Object.keys(schema.shape).some((name) => secretFields.includes(name));
    const holding = routeDeclarations.filter((route) =>
      Object.values(route.responses).some((doc) => holdsSecret(doc.schema)),
    );
    expect(holding.length).toBeGreaterThanOrEqual(8);
    for (const route of holding) {
      expect(route.answerCarriesSecret, `${route.method} ${route.path}`).toBe(true);
    }
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: unknown }> }>>;
    };
    const token = document.paths['/oauth/token']!.post!.responses['200']!;
    expect(token.headers).toMatchObject({ 'Cache-Control': { schema: { enum: ['no-store'] } } });
  });

  it('documents every route but the operational ones', () => {
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const expected = routeDeclarations
      .filter((route) => !route.undocumented)
      .map((route) => `${route.method} ${documentedPath(route.path)}`);
    expect(documented.sort()).toEqual(expected.sort());
    expect(documented).not.toContain('GET /metrics');
  });

  it('tags each route in /openapi.json with its section: every dashboard API route is in "dashboard"', () => {
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const tagsOf = (path: string): string[][] =>
      Object.values(document.paths[path] ?? {}).map((operation) => operation.tags ?? []);
    const dashboardPaths = Object.keys(document.paths).filter((path) =>
      path.startsWith('/dashboard/api/'),
    );
    expect(dashboardPaths.length).toBeGreaterThan(40);
    for (const path of dashboardPaths)
      expect(tagsOf(path)).toEqual(tagsOf(path).map(() => ['dashboard']));
    // The paged lists share a declaration helper; they are in the section too.
    expect(tagsOf('/dashboard/api/orgs/{org_id}/apps')).toContainEqual(['dashboard']);
    expect(tagsOf('/v1/chat/completions')).toEqual([['inference']]);
    expect(tagsOf('/oauth/token')).toEqual([['oauth']]);
    const { tags } = document as unknown as { tags: Array<{ name: string; description: string }> };
    expect(tags.map((tag) => tag.name)).toEqual([
      'inference',
      'product users',
      'dashboard',
      'oauth',
    ]);
    for (const tag of tags) expect(tag.description.length).toBeGreaterThan(20);
  });

  it('types every count in /openapi.json (tokens, requests, searches, …) as an integer', () => {
    const document = buildOpenApiDocument(routeDeclarations);
    /** Every numeric property of every schema: where it is, its name, its parent's name. */
    const numeric: Array<{ where: string; name: string; parent: string; type: unknown }> = [];
    const walk = (node: unknown, where: string, parent: string): void => {
      if (Array.isArray(node))
        return node.forEach((item, i) => walk(item, `${where}/${i}`, parent));
      if (node === null || typeof node !== 'object') return;
      const properties = (node as { properties?: Record<string, { type?: unknown }> }).properties;
      for (const [name, schema] of Object.entries(properties ?? {})) {
        const types = [schema?.type].flat();
        if (types.includes('number') || types.includes('integer'))
          numeric.push({ where: `${where}/${name}`, name, parent, type: schema.type });
      }
      for (const [key, value] of Object.entries(node))
        walk(value, `${where}/${key}`, key === 'properties' ? parent : key);
    };
    walk(document, '', '');
    // A count by its name, or a member of an object of counts. (Money is never a number:
    // decimal strings.)
    const counts = numeric.filter(
      ({ name, parent }) =>
        /(tokens|requests|_count)$|^requests_/.test(name) ||
        parent === 'counts' ||
        parent.startsWith('tokens_'),
    );
    const usageRow = counts
      .filter(({ where }) => where.includes('/dashboard/api/orgs/{org_id}/usage/'))
      .map(({ name }) => name);
    expect(usageRow.sort()).toEqual([
      'cache_read_tokens',
      'cache_write_1h_tokens',
      'cache_write_tokens',
      'input_tokens',
      'output_tokens',
      'requests',
      'total_tokens',
      'web_search_requests',
    ]);
    expect(counts.length).toBeGreaterThan(50);
    expect(counts.filter(({ type }) => [type].flat()[0] !== 'integer')).toEqual([]);
  });

  it('declares every parameter of every path template, and no parameter the path lacks', () => {
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { parameters?: OpenApiParameter[] }>>;
    };
    let templated = 0;
    for (const [path, operations] of Object.entries(document.paths)) {
      // A template expression is a bare name: OpenAPI has no catch-all `{name*}`.
      expect(path, path).not.toMatch(/\{[^}]*[^\w}][^}]*\}/);
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((found) => found[1]!);
      if (names.length > 0) templated += 1;
      for (const [method, operation] of Object.entries(operations)) {
        const declared = (operation.parameters ?? []).filter(
          (parameter) => parameter.in === 'path',
        );
        expect(declared.map((parameter) => parameter.name).sort(), `${method} ${path}`).toEqual(
          [...names].sort(),
        );
        for (const parameter of declared) expect(parameter.required).toBe(true);
      }
    }
    expect(templated).toBeGreaterThan(30);
    expect(document.paths['/v1/models/{model_id}']!.get!.parameters).toEqual([
      expect.objectContaining({ name: 'model_id', in: 'path', required: true }),
      expect.objectContaining({ name: 'vendor-version', in: 'header', required: false }),
    ]);
  });

  it('lists under each error status only the codes the route answers with that status', () => {
    const document = buildOpenApiDocument(routeDeclarations);
    const schemas = (document.components as { schemas: Record<string, unknown> }).schemas;
    /** The codes an error body's schema admits (each code's component fixes its code). */
    const codesOf = (schema: Record<string, unknown>): string[] => {
      if (typeof schema.$ref === 'string') {
        const name = schema.$ref.replace('#/components/schemas/', '');
        expect(schemas[name], schema.$ref).toBeDefined();
        return [name];
      }
      if (schema.oneOf) return (schema.oneOf as Record<string, unknown>[]).flatMap(codesOf);
      // OAuth's shape: the component and an enum of gw_code.
      const [base, narrowed] = schema.allOf as [{ $ref: string }, { properties: never }];
      expect(base.$ref).toBe('#/components/schemas/OAuthError');
      return (narrowed.properties as { gw_code: { enum: string[] } }).gw_code.enum;
    };
    const paths = document.paths as Record<string, Record<string, OpenApiOperation>>;
    let checked = 0;
    for (const route of routeDeclarations.filter((declared) => !declared.undocumented)) {
      const operation = paths[documentedPath(route.path)]![route.method.toLowerCase()]!;
      const expected = new Map<string, string[]>();
      for (const code of routeErrorCodes(route)) {
        const status = String(errorCatalogue[code].status);
        expected.set(status, [...(expected.get(status) ?? []), code]);
      }
      // An error status the route answers itself (/readyz's 503) has no codes.
      const isError = (status: string) => Number(status) >= 400 && !(status in route.responses);
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!isError(status)) continue;
        const codes = codesOf(response.content!['application/json']!.schema);
        expect(codes, `${route.method} ${route.path} ${status}`).toEqual(expected.get(status));
        for (const code of codes)
          expect(errorCatalogue[code as ErrorCode].status, code).toBe(Number(status));
        checked += 1;
      }
      expect(Object.keys(operation.responses).filter(isError).sort()).toEqual(
        [...expected.keys()].sort(),
      );
    }
    expect(checked).toBeGreaterThan(300);
    // Each code is one shared component, described by its status and summary.
    expect(schemas.gw_unknown_key).toEqual({
      description: '401: API key unknown',
      allOf: [
        { $ref: '#/components/schemas/Error' },
        { properties: { error: { properties: { code: { const: 'gw_unknown_key' } } } } },
      ],
    });
  });

  it('is a well-formed OpenAPI 3.1 document: references resolve, security schemes exist, responses are described', () => {
    const document = buildOpenApiDocument(routeDeclarations);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const walk = (node: unknown, visit: (object: Record<string, unknown>) => void): void => {
      if (Array.isArray(node)) return node.forEach((item) => walk(item, visit));
      if (node === null || typeof node !== 'object') return;
      visit(node as Record<string, unknown>);
      for (const value of Object.values(node)) walk(value, visit);
    };
    let references = 0;
    walk(document, (object) => {
      if (typeof object.$ref !== 'string') return;
      references += 1;
      expect(
        () => resolveRef(document, object.$ref as string),
        object.$ref as string,
      ).not.toThrow();
    });
    expect(references).toBeGreaterThan(300);
    const schemes = Object.keys(
      (document.components as { securitySchemes: Record<string, unknown> }).securitySchemes,
    );
    const operationIds = new Set<string>();
    for (const [path, operations] of Object.entries(
      document.paths as Record<string, Record<string, OpenApiOperation>>,
    )) {
      expect(path.startsWith('/'), path).toBe(true);
      for (const [method, operation] of Object.entries(operations)) {
        expect(['get', 'post', 'put', 'patch', 'delete']).toContain(method);
        for (const requirement of operation.security ?? [])
          for (const name of Object.keys(requirement)) expect(schemes).toContain(name);
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
        for (const response of Object.values(operation.responses))
          expect(typeof response.description).toBe('string');
        // Client generators name their methods by it: every operation has one, unique.
        expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Za-z0-9]+$/);
        expect(operationIds.has(operation.operationId!), operation.operationId).toBe(false);
        operationIds.add(operation.operationId!);
      }
    }
    // /v1/messages takes the key as its clients send it (x-api-key) or as a bearer token.
    const messages = (document.paths as Record<string, Record<string, OpenApiOperation>>)[
      '/v1/messages'
    ]!.post!;
    expect(messages.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
    // The request headers the inference routes read are parameters a generated client can send.
    const headersOf = (path: string) =>
      Object.values((document.paths as Record<string, Record<string, OpenApiOperation>>)[path]!)
        .flatMap((operation) => operation.parameters ?? [])
        .filter((parameter) => parameter.in === 'header')
        .map((parameter) => parameter.name);
    expect(headersOf('/v1/chat/completions')).toEqual([
      'X-GW-External-User-ID',
      'X-GW-Legacy-Errors',
    ]);
    expect(headersOf('/v1/messages')).toEqual([
      'X-GW-External-User-ID',
      'X-GW-Legacy-Errors',
      'vendor-version',
    ]);
    expect(headersOf('/v1/models')).toEqual(['vendor-version']);
    // The error bodies are shared components, not one enum of every code per response (that
    // would be several times this size).
    expect(Buffer.byteLength(JSON.stringify(document))).toBeLessThan(400_000);
  });

  it("is valid against the OpenAPI 3.1 specification's own JSON Schema", async () => {
    const validator = new Validator();
    const result = await validator.validate(buildOpenApiDocument(routeDeclarations));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    // A document that breaks the specification is refused by it (the check can fail).
    const broken = structuredClone(buildOpenApiDocument(routeDeclarations)) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    broken.paths['/healthz']!.get!.responses['200'] = { content: {} }; // no description
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('holds only schemas that compile as JSON Schema 2020-12, strictly (unknown keywords refused)', () => {
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: object;
      components: { schemas: object; parameters: object };
    };
    const failures = schemaCompileFailures(document);
    expect(failures.count).toBeGreaterThan(500);
    expect(failures.failed).toEqual([]);
    // The check can fail: a misspelt keyword and a reference to no component are refused
    // (two paths beside the real components: compiling the whole document again costs seconds).
    const broken = {
      components: document.components,
      paths: {
        '/healthz': {
          get: {
            responses: {
              200: {
                description: 'x',
                content: { 'application/json': { schema: { type: 'object', propertise: {} } } },
              },
            },
          },
        },
        '/readyz': {
          get: {
            responses: {
              200: {
                description: 'x',
                content: {
                  'application/json': { schema: { $ref: '#/components/schemas/Nothing' } },
                },
              },
            },
          },
        },
      },
    };
    expect(schemaCompileFailures(broken).failed.map((failure) => failure.at)).toEqual([
      '/healthz get 200 application/json',
      '/readyz get 200 application/json',
    ]);
    // CPU-bound (a thousand compiles): seconds alone, far more beside a loaded suite.
  }, 120_000);

  it('serves a public route with no authenticator call', async () => {
    const before = authCalls;
    const open = createHttpServer({
      maxBodyBytes: 1024,
      logger: createLogger('silent'),
      routes: bindRoutes(
        routeDeclarations.filter((route) => route.path === '/healthz'),
        {} as never,
        authenticators,
      ),
    });
    const openPort = await open.listen('127.0.0.1', 0);
    const answer = await getJson(`http://127.0.0.1:${openPort}/healthz`);
    open.stopAccepting();
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'ok' });
    expect(authCalls).toBe(before);
  });
});

/**
 * Compiles every schema of an OpenAPI document with ajv (draft 2020-12, strict): the shared
 * components as one schema's `$defs`, each operation's parameters, bodies and answers against
 * them. Returns how many were compiled and where one failed.
 */
function schemaCompileFailures(document: {
  paths: object;
  components: { schemas: object; parameters: object };
}) {
  const base = 'https://gw.invalid/openapi.json';
  const rebased = <T>(schema: T): T =>
    JSON.parse(
      JSON.stringify(schema).split('"#/components/schemas/').join(`"${base}#/$defs/`),
    ) as T;
  const ajv = new Ajv2020({ strict: true, strictTypes: false, code: { optimize: false } });
  // ajv-formats is CommonJS: its plugin is the module's `default` export.
  ajvFormats.default(ajv);
  ajv.addSchema({ $id: base, $defs: rebased(document.components.schemas) });
  const failed: Array<{ at: string; error: string }> = [];
  let count = 0;
  const compile = (at: string, schema: object) => {
    count += 1;
    try {
      ajv.compile({ ...rebased(schema), $id: `${base}/${count}` });
    } catch (error) {
      failed.push({ at, error: (error as Error).message });
    }
  };
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    compile(`components ${name}`, schema as object);
  }
  const walk = (node: unknown, at: string[]): void => {
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'schema' && value && typeof value === 'object') compile(at.join(' '), value);
      else walk(value, key === 'content' || key === 'responses' ? at : [...at, key]);
    }
  };
  walk(document.components.parameters, ['parameters']);
  walk(document.paths, []);
  return { count, failed };
}
