// The client address is read as the request arrives, for the routes declared to read it
// (decision 471): a handler that reads it after an await gets it even once its client has gone
// (uWS then refuses the peer's address, and such requests all counted as one client ''). A
// dual-stack listener's IPv4 peer is its IPv4 address (decision 472). Served in-process by the
// real HTTP adapter (uWS) on a dual-stack port, counted by the real throttle in the real Redis.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../src/accounts/login-throttle.js';
import { createHttpServer, type HttpServer } from '../src/http/server.js';
import type { RequestAnnotations } from '../src/http/types.js';
import { createLogger } from '../src/log.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { bindRoutes } from '../src/routes/framework/bind.js';
import { declareRoute, type Authenticators } from '../src/routes/framework/declaration.js';
import { uniquePrefix } from './support/env.js';
import { getJson } from './support/http.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('client-address-capture');
const redis = testRedis();
const keys = createRedisKeys(prefix);
const throttle = new LoginThrottle(redis, keys);

/** What the handler below saw: it started, and the address it counted once its client left. */
let started: () => void = () => undefined;
let counted: (address: string) => void = () => undefined;

/** A link-use route whose handler reads the address only after its client has gone. */
const lateReader = declareRoute({
  method: 'POST',
  path: '/late-reader',
  summary: 'Counts a link use once its client has gone',
  caller: { kind: 'none' },
  readsClientAddress: true,
  responses: { 200: { description: 'counted' } },
  async handler({ request, response }) {
    started();
    await new Promise<void>((resolve) => response.onAborted(resolve));
    await throttle.linkAttempt(request.remoteAddress);
    counted(request.remoteAddress);
  },
});

const reader = declareRoute({
  method: 'GET',
  path: '/reader',
  summary: 'Answers the client address',
  caller: { kind: 'none' },
  readsClientAddress: true,
  responses: { 200: { description: 'the address' } },
  handler: ({ request }) => ({ address: request.remoteAddress }),
});

/** A route that reads the address without declaring it. */
const undeclaredReader = declareRoute({
  method: 'GET',
  path: '/undeclared-reader',
  summary: 'Answers the client address without declaring that it reads it',
  caller: { kind: 'none' },
  responses: { 200: { description: 'the address' } },
  handler: ({ request }) => ({ address: request.remoteAddress }),
});

const logged: RequestAnnotations[] = [];
let server: HttpServer;
let port: number;

beforeAll(async () => {
  server = createHttpServer({
    maxBodyBytes: 1024,
    logger: createLogger('silent'),
    requestLog: ({ annotations }) => logged.push({ ...annotations }),
    routes: bindRoutes([lateReader, reader, undeclaredReader], {}, {} as Authenticators),
  });
  // Dual-stack: uWS gives the IPv4 peer 127.0.0.1 as 0000:0000:0000:0000:0000:ffff:7f00:0001.
  port = await server.listen('::', 0);
});

afterAll(async () => {
  server.stopAccepting();
  await deletePrefix(redis, prefix);
  await redis.quit();
});

describe('the client address', () => {
  it('is counted as the client’s after an await, though the client left before the handler read it', async () => {
    const handlerStarted = new Promise<void>((resolve) => (started = resolve));
    const addressCounted = new Promise<string>((resolve) => (counted = resolve));
    const socket: Socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('POST /late-reader HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 2\r\n\r\n{}');
    await handlerStarted;
    socket.destroy(); // gone before the handler reads the address
    expect(await addressCounted).toBe('127.0.0.1');
    expect(await redis.get(keys.emailAttempts('link-use', '127.0.0.1'))).toBe('1');
    expect(await redis.exists(keys.emailAttempts('link-use', ''))).toBe(0);
  });

  it('of a dual-stack listener’s IPv4 peer is its IPv4 address, in the answer and the request log', async () => {
    logged.length = 0;
    const answer = await getJson(`http://127.0.0.1:${port}/reader`);
    expect(answer.body).toEqual({ address: '127.0.0.1' });
    expect(logged).toEqual([expect.objectContaining({ clientAddress: '127.0.0.1' })]);
  });

  it('is read only for the routes that declare it: reading it elsewhere is a bug (500)', async () => {
    logged.length = 0;
    const answer = await getJson(`http://127.0.0.1:${port}/undeclared-reader`);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ error: { code: 'gw_internal_error' } });
    expect(logged).toEqual([expect.not.objectContaining({ clientAddress: expect.anything() })]);
  });
});
