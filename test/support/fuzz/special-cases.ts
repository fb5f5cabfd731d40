// Inputs that need a raw socket or a fixed shape: HTTP framing tricks, clients that vanish,
// the targeted probes of issue 10, and the large bodies of the memory phase.
import { refusedAmount, refusedFraming, type Expectation, type FuzzCase } from './cases.js';
import { toJson } from './hostile-values.js';
import type { Random } from './random.js';
import { encodeRequest, type HeaderValue } from './raw-http.js';
import type { FuzzTarget } from './route-specs.js';

const CHAT = '/v1/chat/completions';
const MESSAGES = '/v1/messages';

function chatJson(target: FuzzTarget, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(
    toJson({
      model: 'vendor_b/gpt-4o-mini',
      messages: [{ role: 'user', content: 'framing' }],
      max_tokens: 8,
      user: target.users[0],
      ...extra,
    }),
  );
}

function head(target: FuzzTarget, lines: ReadonlyArray<readonly [string, HeaderValue]>) {
  return [
    ['authorization', `Bearer ${target.apiKey}`],
    ['content-type', 'application/json'],
    ...lines,
  ] as Array<readonly [string, HeaderValue]>;
}

/** Raw-socket framing tricks, each aimed at the chat route (the one that places holds). */
export function framingCases(target: FuzzTarget): FuzzCase[] {
  const body = chatJson(target);
  const length = String(body.length);
  const chunked = Buffer.from(`${body.length.toString(16)}\r\n${body.toString()}\r\n0\r\n\r\n`);
  const post = (
    shape: string,
    headers: ReadonlyArray<readonly [string, HeaderValue]>,
    payloadBody: Buffer,
    extra: Partial<FuzzCase> = {},
  ): FuzzCase => ({
    route: `POST ${CHAT}`,
    shape: `framing ${shape}`,
    payload: encodeRequest({
      method: 'POST',
      target: CHAT,
      headers: head(target, headers),
      body: payloadBody,
      autoContentLength: false,
    }),
    mayClose: true,
    ...extra,
  });
  const raw = (shape: string, text: string, extra: Partial<FuzzCase> = {}): FuzzCase => ({
    route: 'framing',
    shape: `framing ${shape}`,
    payload: Buffer.from(text, 'latin1'),
    mayClose: true,
    ...extra,
  });
  const auth = `authorization: Bearer ${target.apiKey}\r\n`;
  return [
    post(
      'duplicate content-length, small first',
      [
        ['content-length', '2'],
        ['content-length', length],
      ],
      body,
      { expectation: refusedFraming },
    ),
    post(
      'duplicate content-length, large first',
      [
        ['content-length', length],
        ['content-length', '2'],
      ],
      body,
      { expectation: refusedFraming },
    ),
    post(
      'duplicate content-length, zero last',
      [
        ['content-length', length],
        ['content-length', '0'],
      ],
      body,
      { expectation: refusedFraming },
    ),
    post(
      'duplicate content-length, over the body limit last',
      [
        ['content-length', length],
        ['content-length', String(64 * 1024 * 1024)],
      ],
      body,
      { expectation: refusedFraming },
    ),
    post(
      'duplicate content-length, equal',
      [
        ['content-length', length],
        ['content-length', length],
      ],
      body,
    ),
    post('content-length list "n, n"', [['content-length', `${length}, ${length}`]], body),
    post(
      'content-length and chunked together',
      [
        ['content-length', length],
        ['transfer-encoding', 'chunked'],
      ],
      chunked,
    ),
    post('chunked', [['transfer-encoding', 'chunked']], chunked),
    post(
      'chunked with a bad size',
      [['transfer-encoding', 'chunked']],
      Buffer.from('zz\r\n{}\r\n0\r\n\r\n'),
    ),
    post(
      'chunked with a 2^64 size',
      [['transfer-encoding', 'chunked']],
      Buffer.from('ffffffffffffffff\r\n{}\r\n0\r\n\r\n'),
    ),
    post('transfer-encoding gzip', [['transfer-encoding', 'gzip']], body),
    post(
      'transfer-encoding "chunked, identity"',
      [['transfer-encoding', 'chunked, identity']],
      chunked,
    ),
    post('negative content-length', [['content-length', '-1']], body),
    post('non-numeric content-length', [['content-length', 'abc']], body),
    post('content-length with plus sign', [['content-length', `+${length}`]], body),
    post('content-length 20 digits', [['content-length', '99999999999999999999']], body),
    post('content-length with inner space', [['content-length', `1 ${length}`]], body),
    post(
      'content-length larger than the body, then half-close',
      [['content-length', String(body.length + 50)]],
      body,
      {
        behaviour: { kind: 'truncate', bytes: 100_000, then: 'half-close' },
      },
    ),
    post(
      'content-length smaller than the body',
      [['content-length', String(body.length - 5)]],
      body,
    ),
    post(
      'expect 100-continue',
      [
        ['content-length', length],
        ['expect', '100-continue'],
      ],
      body,
    ),
    post(
      '200 extra headers',
      [
        ['content-length', length],
        ...Array.from({ length: 200 }, (_, i) => [`x-h${i}`, 'v'] as const),
      ],
      body,
    ),
    post(
      '70 KB header value',
      [
        ['content-length', length],
        ['x-big', 'b'.repeat(70_000)],
      ],
      body,
    ),
    post(
      'NUL byte in a header name',
      [
        ['content-length', length],
        [`x-a\u0000b`, 'v'],
      ],
      body,
    ),
    raw(
      'header line without a colon',
      `POST ${CHAT} HTTP/1.1\r\nhost: x\r\n${auth}no-colon-here\r\ncontent-length: 2\r\n\r\n{}`,
    ),
    raw(
      'space before the colon',
      `POST ${CHAT} HTTP/1.1\r\nhost: x\r\n${auth}content-length : 2\r\n\r\n{}`,
    ),
    raw(
      'obs-fold continuation line',
      `POST ${CHAT} HTTP/1.1\r\nhost: x\r\n${auth}x-folded: a\r\n  b\r\ncontent-length: 2\r\n\r\n{}`,
    ),
    raw('HTTP/1.0 request', `GET /healthz HTTP/1.0\r\n\r\n`),
    raw('HTTP/2.0 in a 1.1 request line', `GET /healthz HTTP/2.0\r\nhost: x\r\n\r\n`),
    raw('HTTP/0.9 request line', `GET /healthz\r\n\r\n`),
    raw(
      'lowercase method',
      `post ${CHAT} HTTP/1.1\r\nhost: x\r\n${auth}content-length: 2\r\n\r\n{}`,
    ),
    raw('double spaces in the request line', `GET  /healthz  HTTP/1.1\r\nhost: x\r\n\r\n`),
    raw('no host header', `GET /healthz HTTP/1.1\r\n\r\n`),
    raw('bare LF line endings', `GET /healthz HTTP/1.1\nhost: x\n\n`),
    raw('NUL byte in the request target', `GET /heal\u0000thz HTTP/1.1\r\nhost: x\r\n\r\n`),
    raw(
      'garbage instead of a request',
      '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003',
    ),
    {
      route: 'framing',
      shape: 'framing pipelined: chat with conflicting content-length, then a smuggled request',
      payload: Buffer.concat([
        encodeRequest({
          method: 'POST',
          target: CHAT,
          headers: head(target, [
            ['content-length', '0'],
            ['content-length', length],
          ]),
          body,
          autoContentLength: false,
        }),
        encodeRequest({ method: 'GET', target: '/healthz', headers: [] }),
      ]),
      answers: 2,
      mayClose: true,
      expectation: refusedFraming,
    },
  ];
}

/** A streamed or slow request whose client leaves at a chosen moment. */
export function abortCase(target: FuzzTarget, random: Random): FuzzCase {
  const messages = random.chance(0.5);
  const tokens = 100 + random.int(400);
  const text = `mock:output_tokens=${tokens} mock:latency_ms=${random.int(3) * 40} tell a story`;
  const body = Buffer.from(
    toJson(
      messages
        ? {
            model: 'vendor_a/claude-haiku-4-5',
            max_tokens: 1000,
            stream: true,
            messages: [{ role: 'user', content: text }],
            metadata: { user_id: random.pick(target.users) },
          }
        : {
            model: random.pick(['vendor_b/gpt-4o-mini', 'vendor_a/claude-haiku-4-5']),
            max_tokens: 1000,
            stream: random.chance(0.8),
            messages: [{ role: 'user', content: text }],
            user: random.pick(target.users),
          },
    ),
  );
  const payload = encodeRequest({
    method: 'POST',
    target: messages ? MESSAGES : CHAT,
    headers: head(target, []),
    body,
  });
  const behaviour = random.pick([
    { name: 'client leaves mid-stream', behaviour: { kind: 'abort-mid-answer' } },
    {
      name: 'client leaves before the answer',
      behaviour: { kind: 'vanish', afterMs: random.int(60) },
    },
    {
      name: 'client leaves mid-upload',
      behaviour: { kind: 'truncate', bytes: payload.length - 10, then: 'drop' },
    },
  ] as const);
  return {
    route: `POST ${messages ? MESSAGES : CHAT}`,
    shape: `abort ${behaviour.name}`,
    payload,
    behaviour: behaviour.behaviour,
  };
}

/** The hostile inputs issue 10 names, always sent whatever the seed. */
export function probeCases(target: FuzzTarget): FuzzCase[] {
  const service = [
    ['authorization', `Bearer ${target.serviceKey}`],
    ['content-type', 'application/json'],
  ] as const;
  const grant = (
    shape: string,
    extra: Record<string, unknown>,
    user: string,
    expectation?: Expectation,
  ): FuzzCase => ({
    route: 'POST /product-users/by-external-id/credit-grants',
    shape: `probe ${shape}`,
    ...(expectation && { expectation }),
    payload: encodeRequest({
      method: 'POST',
      target: '/product-users/by-external-id/credit-grants',
      headers: service,
      body: Buffer.from(
        toJson({ app_id: target.appId, external_user_id: user, amount: '1', ...extra }),
      ),
    }),
  });
  const chat = (shape: string, extra: Record<string, unknown>): FuzzCase => ({
    route: `POST ${CHAT}`,
    shape: `probe ${shape}`,
    payload: encodeRequest({
      method: 'POST',
      target: CHAT,
      headers: head(target, []),
      body: chatJson(target, extra),
    }),
  });
  const put = (shape: string, externalUserId: string): FuzzCase => ({
    route: 'PUT /product-users/by-external-id',
    shape: `probe ${shape}`,
    payload: encodeRequest({
      method: 'PUT',
      target: '/product-users/by-external-id',
      headers: service,
      body: Buffer.from(toJson({ app_id: target.appId, external_user_id: externalUserId })),
    }),
  });
  const credited = target.users[1]!;
  const huge = target.hugeCreditUser;
  return [
    grant('credit grant of 1e18 dollars', { amount: '1000000000000000000' }, huge, refusedAmount),
    grant(
      'credit grant of 99,999,999,999,999,999 dollars',
      { amount: '99999999999999999' },
      huge,
      refusedAmount,
    ),
    grant(
      'credit grant one nano-unit past int64',
      { amount: '9223372036.854775808' },
      huge,
      refusedAmount,
    ),
    grant('credit grant just past 2^53 nano-units', { amount: '9007199.254740993' }, credited),
    grant('credit grant in EUR', { amount: '5', currency: 'EUR' }, credited),
    // This user's base allowance is one nano-unit: only those huge grants can pay.
    ...[1, 2, 3].map((index) =>
      chat(`chat ${index} paid from a grant past int64 nano-units`, { user: huge }),
    ),
    chat('chat paid from a grant past int64 nano-units, streamed', { user: huge, stream: true }),
    chat('chat as the user holding a grant past 2^53 nano-units', { user: credited }),
    chat('n=4 with long output', {
      n: 4,
      max_tokens: 60,
      messages: [{ role: 'user', content: 'mock:output_tokens=50 four answers' }],
    }),
    {
      ...chat('nesting 10,000 deep in a passthrough field', {}),
      payload: encodeRequest({
        method: 'POST',
        target: CHAT,
        headers: head(target, []),
        body: Buffer.from(
          `{"model":"vendor_b/gpt-4o-mini","max_tokens":8,"messages":[{"role":"user","content":"deep"}],"x_deep":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
        ),
      }),
    },
    chat('NUL byte in user', { user: 'fuzz\u0000nul' }),
    chat('lone surrogate in user', { user: 'fuzz\ud800' }),
    chat('NUL byte in product_user_metadata', {
      user: 'fuzz-probe-meta',
      product_user_metadata: { note: 'a\u0000b' },
    }),
    put('10,000-character external_user_id', 'e'.repeat(10_000)),
    put('NUL byte in external_user_id', 'fuzz\u0000put'),
    {
      route: 'GET /product-users/by-external-id',
      shape: 'probe NUL byte in the external_user_id query parameter',
      payload: encodeRequest({
        method: 'GET',
        target: `/product-users/by-external-id?app_id=${target.appId}&external_user_id=a%00b`,
        headers: [service[0]],
      }),
    },
  ];
}

/** Chat requests carrying ~`megabytes` MiB of product-user metadata, each for a new user. */
export function bigMetadataCase(target: FuzzTarget, index: number, megabytes: number): FuzzCase {
  const filler = 'm'.repeat(1024);
  const metadata: Record<string, string> = {};
  for (let kib = 0; kib < megabytes * 1024; kib += 1) metadata[`k${kib}`] = filler;
  return {
    route: `POST ${CHAT}`,
    shape: `memory ${megabytes} MiB product_user_metadata for a new user`,
    payload: encodeRequest({
      method: 'POST',
      target: CHAT,
      headers: head(target, []),
      body: chatJson(target, { user: `fuzz-big-${index}`, product_user_metadata: metadata }),
    }),
  };
}
