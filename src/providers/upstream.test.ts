// The vendor client against a real local HTTP server: what goes on the wire, and that a large
// body is not kept for the whole call (a stream's minutes) once it has been sent.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collected } from '../../test/support/collectable.js';
import { RELEASED_BODY_BYTES, UpstreamClient, type UpstreamCall } from './upstream.js';

interface Received {
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
  /** The open answer: headers sent, body not ended (a stream in progress). */
  readonly response: ServerResponse;
}

const received: Received[] = [];
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    received.push({ headers: request.headers, body: Buffer.concat(chunks), response });
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: {}\n\n');
  });
});
/** Connections the vendor accepted. */
let connections = 0;
server.on('connection', () => (connections += 1));
const client = new UpstreamClient(10_000);
const calls: UpstreamCall[] = [];
let baseUrl = '';

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const call of calls) call.abort();
  for (const { response } of received) response.end();
  await client.close();
  server.close();
});

/** Starts a call with a fresh body of `bytes` bytes; only a weak reference to it stays here. */
function callWith(bytes: number): { call: UpstreamCall; body: WeakRef<Buffer>; text: string } {
  const text = JSON.stringify({ prompt: 'x'.repeat(bytes - '{"prompt":""}'.length) });
  const body = Buffer.from(text);
  const call = client.request({
    baseUrl,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: 'Bearer key-1' },
    body,
  });
  calls.push(call);
  return { call, body: new WeakRef(body), text };
}

/** A call on `client` whose body is `{"prompt": …}`, and a weak reference to that body. */
function tracedPromptCall(
  client: UpstreamClient,
  prompt: string,
): { call: UpstreamCall; body: WeakRef<Buffer> } {
  const body = Buffer.from(JSON.stringify({ prompt }));
  const call = client.request({
    baseUrl,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { call, body: new WeakRef(body) };
}

/** A call on `client` whose body is `{"prompt": …}`. */
function promptCall(client: UpstreamClient, prompt: string): UpstreamCall {
  return tracedPromptCall(client, prompt).call;
}

/** The prompts the vendor received after its first `before` requests, in order. */
function promptsSince(before: number): unknown[] {
  return received.slice(before).map(({ body }) => JSON.parse(body.toString()) as unknown);
}

/** Ends what a test left open: its calls, the vendor's answers since `before`, its client. */
async function closeAll(
  client: UpstreamClient,
  made: readonly UpstreamCall[],
  before: number,
): Promise<void> {
  for (const call of made) call.abort();
  for (const { response } of received.slice(before)) response.end();
  await client.close().catch(() => undefined);
}

describe('UpstreamClient', () => {
  it.each([
    ['a small body', 200],
    ['a large body', RELEASED_BODY_BYTES * 16],
  ])('sends %s with its content-length, not chunked', async (_name, bytes) => {
    const { call, text } = callWith(bytes);
    const response = await call.response;
    expect(response.statusCode).toBe(200);
    const seen = received.at(-1)!;
    expect(seen.body.toString()).toBe(text);
    expect(seen.headers['content-length']).toBe(String(bytes));
    expect(seen.headers['transfer-encoding']).toBeUndefined();
    expect(seen.headers.authorization).toBe('Bearer key-1');
  });

  it('lets go of a large body once it is sent, while the answer still streams', async () => {
    const { call, body } = callWith(RELEASED_BODY_BYTES * 16);
    const response = await call.response;
    expect(await collected(body)).toBe(true);
    // The call is still open and reads on.
    const first = await response.body[Symbol.asyncIterator]().next();
    expect(Buffer.from(first.value as Uint8Array).toString()).toBe('data: {}\n\n');
  });

  it('tells whether any byte of a call was written: none when it was abandoned before its start', async () => {
    const before = received.length;
    const { call: abandoned } = callWith(200);
    expect(abandoned.written).toBe(false);
    abandoned.abort(); // still waiting for its connection
    await expect(abandoned.response).rejects.toMatchObject({ code: 'GW_UPSTREAM_ABORTED' });
    expect(abandoned.written).toBe(false);

    const { call: sent } = callWith(200);
    await sent.response;
    expect(sent.written).toBe(true);
    sent.abort();
    expect(sent.written).toBe(true);
    expect(received.length).toBe(before + 1);
  });

  it('ends a call abandoned behind a full pool at once; the vendor never gets it, the next one is served', async () => {
    const single = new UpstreamClient(10_000, 1);
    let lastBody: WeakRef<Buffer> | undefined;
    const made: UpstreamCall[] = [];
    const request = (prompt: string): UpstreamCall => {
      const { call, body } = tracedPromptCall(single, prompt);
      lastBody = body;
      made.push(call);
      return call;
    };
    const before = received.length;
    try {
      const occupier = request('occupier');
      await occupier.response; // its stream holds the only connection
      // A large prompt: undici keeps the request queued, but not the prompt.
      const abandoned = request('abandoned '.repeat(RELEASED_BODY_BYTES));
      const abandonedBody = lastBody!;
      const next = request('next');
      abandoned.abort();
      const ended = await Promise.race([
        abandoned.response.then(
          () => 'answered',
          (error: { code?: string }) => error.code,
        ),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1_000)),
      ]);
      expect(ended).toBe('GW_UPSTREAM_ABORTED');
      expect(abandoned.written).toBe(false);
      expect(await collected(abandonedBody)).toBe(true);

      const connectionsBefore = connections;
      received.at(-1)!.response.end(); // the occupier's stream ends: its connection is free
      await (await occupier.response).body.bytes();
      expect((await next.response).statusCode).toBe(200);
      // Dropping the abandoned request left the connection to the next one.
      expect(connections).toBe(connectionsBefore);
      expect(next.written).toBe(true);
      expect(promptsSince(before)).toEqual([{ prompt: 'occupier' }, { prompt: 'next' }]);
    } finally {
      await closeAll(single, made, before);
    }
  });

  it('keeps calls beyond a full pool in its own line, in order; an abandoned one leaves it with its prompt', async () => {
    const single = new UpstreamClient(10_000, 1);
    const made: UpstreamCall[] = [];
    const request = (prompt: string): { call: UpstreamCall; body: WeakRef<Buffer> } => {
      const traced = tracedPromptCall(single, prompt);
      made.push(traced.call);
      return traced;
    };
    const before = received.length;
    const connectionsBefore = connections;
    try {
      const { call: occupier } = request('occupier');
      await occupier.response; // its stream holds the only connection
      expect(single.waiting()).toBe(0);
      const { call: first } = request('first');
      // Small prompts, which undici kept with a request queued in it until it reached it: a
      // client that leaves at once is charged nothing, so it can leave any number of them.
      const abandoned = Array.from({ length: 500 }, (_, n) => request(`abandoned ${n}`));
      const { call: last } = request('last');
      expect(single.waiting()).toBe(502);
      for (const { call } of abandoned) call.abort();
      expect(single.waiting()).toBe(2);
      for (const { call } of abandoned) {
        await expect(call.response).rejects.toMatchObject({ code: 'GW_UPSTREAM_ABORTED' });
        expect(call.written).toBe(false);
      }
      expect(await collected(abandoned[0]!.body)).toBe(true);
      expect(await collected(abandoned[499]!.body)).toBe(true);

      received.at(-1)!.response.end(); // the occupier's stream ends: `first` goes next
      await (await occupier.response).body.bytes();
      expect((await first.response).statusCode).toBe(200);
      expect(single.waiting()).toBe(1);
      received.at(-1)!.response.end();
      await (await first.response).body.bytes();
      expect((await last.response).statusCode).toBe(200);
      expect(single.waiting()).toBe(0);
      expect(promptsSince(before)).toEqual([
        { prompt: 'occupier' },
        { prompt: 'first' },
        { prompt: 'last' },
      ]);
      expect(connections - connectionsBefore).toBe(1);
    } finally {
      await closeAll(single, made, before);
    }
  });

  it('closes once the calls still waiting for a connection have been sent', async () => {
    const single = new UpstreamClient(10_000, 1);
    const request = (prompt: string): UpstreamCall => promptCall(single, prompt);
    const before = received.length;
    const occupier = request('occupier');
    await occupier.response;
    const waiting = request('waiting');
    let closed = false;
    const closing = single.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(false);
    received.at(-1)!.response.end();
    await (await occupier.response).body.bytes();
    const answer = await waiting.response;
    expect(answer.statusCode).toBe(200);
    received.at(-1)!.response.end();
    await answer.body.bytes();
    // Closing: a new call is refused, not given a pool nobody closes.
    await expect(promptCall(single, 'late').response).rejects.toMatchObject({
      code: 'UND_ERR_CLOSED',
    });
    await closing;
    expect(closed).toBe(true);
    expect(promptsSince(before)).toEqual([{ prompt: 'occupier' }, { prompt: 'waiting' }]);
  });

  it('refuses a call whose headers undici would refuse, without costing its pool a connection', async () => {
    // undici's Pool marks the connection a refused request was given to as busy for good (it
    // waits for a drain that never comes): as many refusals as connections, and every later
    // call to the origin waited forever. A client's own `vendor-version` travels upstream.
    const double = new UpstreamClient(10_000, 2);
    const request = (version: string): UpstreamCall =>
      double.request({
        baseUrl,
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', 'anthropic-version': version },
        body: Buffer.from('{}'),
      });
    const before = received.length;
    try {
      for (const version of ['2023-06-01\x7f', '2023-06-01\u20ac']) {
        const refused = request(version);
        await expect(refused.response).rejects.toMatchObject({ code: 'UND_ERR_INVALID_ARG' });
        expect(refused.written).toBe(false);
      }
      const next = request('2023-06-01');
      const answered = await Promise.race([
        next.response.then((response) => response.statusCode),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 2_000)),
      ]);
      expect(answered).toBe(200);
      expect(received.length).toBe(before + 1);
      next.abort();
    } finally {
      for (const { response } of received.slice(before)) response.end();
      // A wedged pool never closed either (its queued call waited for that same drain).
      const closed = await Promise.race([
        double.close().then(() => 'closed'),
        new Promise((resolve) => setTimeout(() => resolve('still closing'), 2_000)),
      ]);
      expect(closed).toBe('closed');
    }
  });

  it('drops abandoned requests without closing the connection they would have used', async () => {
    const single = new UpstreamClient(10_000, 1);
    const request = (prompt: string): UpstreamCall => promptCall(single, prompt);
    const before = received.length;
    const connectionsBefore = connections;
    const made: UpstreamCall[] = [];
    try {
      const occupier = request('occupier');
      made.push(occupier);
      await occupier.response; // its stream holds the only connection
      // A client that leaves right away is charged nothing, so it can leave many of these.
      const abandoned = [1, 2, 3].map((n) =>
        request(n === 2 ? 'large '.repeat(RELEASED_BODY_BYTES) : `abandoned ${n}`),
      );
      made.push(...abandoned);
      for (const call of abandoned) call.abort();
      await Promise.all(abandoned.map((call) => call.response.catch(() => undefined)));
      const next = request('next');
      made.push(next);
      received.at(-1)!.response.end(); // the occupier's stream ends: its connection is free
      await (await occupier.response).body.bytes();
      expect((await next.response).statusCode).toBe(200);
      expect(promptsSince(before)).toEqual([{ prompt: 'occupier' }, { prompt: 'next' }]);
      // One connection for all of them: each dropped request used to close it, and the next
      // one opened another.
      expect(connections - connectionsBefore).toBe(1);
    } finally {
      await closeAll(single, made, before);
    }
  });
});
