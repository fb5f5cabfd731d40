// Framing and authentication before the body, tested over raw sockets: a request whose
// framing headers disagree is refused with 400 and its connection closed; an unauthenticated
// request is refused without the gateway waiting for (or buffering) its large body.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { startGateway, type GatewayProcess } from './support/processes.js';
import { rawRequest } from './support/raw-http.js';

const { env } = isolatedContext('framing');
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await startGateway(env);
});
afterAll(async () => {
  await gateway?.stop();
});

const chatHead = (...framing: string[]): string =>
  [
    'POST /v1/chat/completions HTTP/1.1',
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Authorization: Bearer gw_${'A'.repeat(43)}`,
    ...framing,
  ].join('\r\n');

const errorOf = (body: string): { code: string; message: string } =>
  (JSON.parse(body) as { error: { code: string; message: string } }).error;

describe('conflicting framing headers', () => {
  const cases: Record<string, string[]> = {
    'two different Content-Length values': ['Content-Length: 2', 'Content-Length: 40'],
    'the longer Content-Length first': ['Content-Length: 40', 'Content-Length: 2'],
    'a Transfer-Encoding other than chunked': ['Transfer-Encoding: gzip, chunked'],
  };
  for (const [name, framing] of Object.entries(cases)) {
    it(`400 gw_invalid_request and the connection closed: ${name}`, async () => {
      // No body: uWS would parse one as chunked and race our answer by dropping the socket.
      const body = framing.some((header) => header.startsWith('Transfer-Encoding')) ? '' : '{}';
      const answer = await rawRequest(gateway.port, chatHead(...framing), body);
      expect(answer.status).toBe(400);
      expect(errorOf(answer.body).code).toBe('gw_invalid_request');
      expect(answer.closed).toBe(true);
    });
  }

  // uWS's own parser drops these connections before any route sees them (no answer at all).
  const droppedByParser: Record<string, string[]> = {
    'Content-Length with Transfer-Encoding': ['Content-Length: 2', 'Transfer-Encoding: chunked'],
    'a Content-Length that is not a number': ['Content-Length: 2x'],
  };
  for (const [name, framing] of Object.entries(droppedByParser)) {
    it(`never served, the connection closed: ${name}`, async () => {
      const answer = await rawRequest(gateway.port, chatHead(...framing), '{}');
      expect([0, 400]).toContain(answer.status);
      expect(answer.closed).toBe(true);
    });
  }

  it('a HEAD whose framing is refused: 400 with Connection: close, and the connection closed', async () => {
    const answer = await rawRequest(
      gateway.port,
      ['HEAD /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length: 0', 'Content-Length: 1'].join(
        '\r\n',
      ),
    );
    expect([answer.status, answer.body, answer.closed]).toEqual([400, '', true]);
    expect(answer.head).toMatch(/\r\nconnection: close(\r|$)/i);
  });

  it('serves nothing pipelined behind an answer that closes the connection', async () => {
    // The refused request and a health check in one write: uWS dispatches the second at
    // once; it finds the first unanswered and drops the connection, serving neither.
    const socket = connect(gateway.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined); // a reset is a close here
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `${chatHead('Content-Length: 2', 'Content-Length: 40')}\r\n\r\n{}` +
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    );
    await closed;
    expect(received).toBe('');
    // Alone, the same refusal is answered (above); and a health check is served.
    expect(
      (await rawRequest(gateway.port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1')).status,
    ).toBe(200);
  });

  it('reads a small refused body to its end and keeps the connection open', async () => {
    const answer = await rawRequest(gateway.port, chatHead('Content-Length: 2'), '{}');
    expect(answer.status).toBe(401);
    expect(answer.closed).toBe(false);
  });

  it('serves the next request on the connection of a refused one', async () => {
    const socket = connect(gateway.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    const request = `${chatHead('Content-Length: 2')}\r\n\r\n{}`;
    const answers = async (count: number): Promise<void> => {
      while ((received.match(/HTTP\/1\.1 401/g) ?? []).length < count) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    for (let count = 1; count <= 3; count += 1) {
      socket.write(request);
      await answers(count);
    }
    socket.destroy();
    expect(received.match(/gw_unknown_key/g)).toHaveLength(3);
  });

  it('accepts a repeated Content-Length with the same value (the request reaches auth)', async () => {
    const answer = await rawRequest(
      gateway.port,
      chatHead('Content-Length: 2', 'Content-Length: 2'),
      '{}',
    );
    expect(answer.status).toBe(401);
    expect(errorOf(answer.body).code).toBe('gw_unknown_key');
  });
});

describe('authentication before the body', () => {
  it('refuses an unknown key without waiting for the rest of a 4 MiB body', async () => {
    const answer = await rawRequest(
      gateway.port,
      chatHead(`Content-Length: ${4 * 1024 * 1024 - 1}`),
      Buffer.alloc(64 * 1024, 0x20),
    );
    expect(answer.status).toBe(401);
    expect(errorOf(answer.body).code).toBe('gw_unknown_key');
    expect(answer.closed).toBe(true);
  });
});

describe('HEAD', () => {
  it("answers a GET route's status and headers with its body's length and no body", async () => {
    const get = await fetch(`${gateway.url}/openapi.json`);
    const getBody = await get.arrayBuffer();
    const answer = await rawRequest(
      gateway.port,
      ['HEAD /openapi.json HTTP/1.1', 'Host: 127.0.0.1'].join('\r\n'),
    );
    expect(answer.status).toBe(200);
    expect(answer.head).toMatch(/\r\ncontent-type: application\/json\r\n/i);
    expect(answer.head).toMatch(
      new RegExp(`\\r\\ncontent-length: ${getBody.byteLength}(\\r|$)`, 'i'),
    );
    expect(answer.body).toBe('');
    expect(answer.closed).toBe(false);
  });

  it('keeps the connection usable: the next answer is read where it starts', async () => {
    const answer = await rawRequest(
      gateway.port,
      [
        'HEAD /healthz HTTP/1.1',
        'Host: 127.0.0.1',
        '',
        'GET /healthz HTTP/1.1',
        'Host: 127.0.0.1',
      ].join('\r\n'),
    );
    // The second answer's head follows the first's at once: no body came between them.
    expect(answer.head).toMatch(/\r\ncontent-length: 15(\r|$)/i);
    expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\ncontent-length: 15$/i);
  });

  it("reports an unknown path's 404 with the length of the GET's answer", async () => {
    const get = await fetch(`${gateway.url}/no-such-path`);
    const body = await get.arrayBuffer();
    const head = await rawRequest(
      gateway.port,
      ['HEAD /no-such-path HTTP/1.1', 'Host: 127.0.0.1'].join('\r\n'),
    );
    expect([get.status, head.status]).toEqual([404, 404]);
    expect(head.head).toMatch(new RegExp(`\\r\\ncontent-length: ${body.byteLength}(\\r|$)`, 'i'));
    expect(head.body).toBe('');
  });

  it('is refused where there is no GET, and named in Allow where there is', async () => {
    const post = await rawRequest(
      gateway.port,
      ['HEAD /v1/chat/completions HTTP/1.1', 'Host: 127.0.0.1'].join('\r\n'),
    );
    expect(post.status).toBe(405);
    expect(post.head).toMatch(/\r\nallow: POST(\r|$)/i);
    expect(post.body).toBe('');
    const put = await fetch(`${gateway.url}/healthz`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('a header read as one value, sent twice', () => {
  it.each([
    ['x-gw-external-user-id', ['X-GW-External-User-ID: alice', 'X-GW-External-User-ID: bob']],
    ['authorization', [`Authorization: Bearer gw_${'A'.repeat(43)}`]],
    ['idempotency-key', ['Idempotency-Key: k1', 'Idempotency-Key: k2']],
    ['content-type', ['Content-Type: application/json']],
    // a cache keyed on one Host must not get an answer built from the other (the OAuth issuer)
    ['host', ['Host: evil.example']],
  ])('400 gw_invalid_request naming %s, before any caller is looked up', async (name, extra) => {
    const answer = await rawRequest(gateway.port, chatHead(...extra, 'Content-Length: 2'), '{}');
    expect(answer.status).toBe(400);
    expect(errorOf(answer.body)).toEqual({
      code: 'gw_invalid_request',
      message: `header ${name}: given twice`,
    });
  });

  it('leaves headers gw does not read alone', async () => {
    const answer = await rawRequest(
      gateway.port,
      ['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Accept: a/b', 'Accept: c/d'].join('\r\n'),
    );
    expect(answer.status).toBe(200);
  });
});

describe('the Host header (RFC 9112 section 3.2)', () => {
  const metadata = (host: string | Buffer) =>
    rawRequest(
      gateway.port,
      Buffer.concat([
        Buffer.from('GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: '),
        Buffer.isBuffer(host) ? host : Buffer.from(host, 'latin1'),
      ]),
    );

  it.each([
    ['a user name before the host', 'gw.example.com@evil.example'],
    ['a path, query and fragment', 'evil.example/path?x=1#f'],
    ['a space', 'gw example'],
    ['markup', '"><script>alert(1)</script>'],
    ['a backslash', 'gw.example.com\\evil'],
    ['nothing', ''],
    ['a port that is not digits', 'gw.example.com:https'],
    ['UTF-8 bytes', Buffer.from('gw.exämple.com', 'utf8')],
  ])('400 gw_invalid_request for %s: the issuer is never made from it', async (_name, host) => {
    const answer = await metadata(host);
    expect(answer.status).toBe(400);
    expect(errorOf(answer.body)).toEqual({
      code: 'gw_invalid_request',
      message: 'header host: must be host[:port]',
    });
  });

  it.each([
    ['gw.example.com', 'https://gw.example.com'],
    // as URL writes the origin: what a cache that normalises its key serves for either
    ['GW.Example.COM:8443', 'https://gw.example.com:8443'],
    ['gw.example.com:443', 'https://gw.example.com'],
    ['127.0.0.1:8080', 'https://127.0.0.1:8080'],
    ['[::1]:8080', 'https://[::1]:8080'],
    ['gw_internal.svc.cluster.local.', 'https://gw_internal.svc.cluster.local.'],
  ])('serves a request naming %s, its issuer %s', async (host, issuer) => {
    const answer = await metadata(host);
    expect(answer.status).toBe(200);
    expect((JSON.parse(answer.body) as { issuer: string }).issuer).toBe(issuer);
  });
});
