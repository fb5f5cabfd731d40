// The last look before a request is written, against a real front on its own thread: a
// kept-alive socket the vendor closes during the loop turn before its reuse (the close is not
// read before undici writes) fails the call as not sent, and nothing reaches the vendor.
import dc from 'node:diagnostics_channel';
import { stat } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Pool, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClosingFront, type ClosingFront } from '../../test/support/closing-vendor.js';
import { UpstreamClient, type UpstreamCall, type UpstreamRequest } from './upstream.js';

const vendor = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.end('{}'));
});
let front: ClosingFront;
const client = new UpstreamClient(5_000);

beforeAll(async () => {
  vendor.listen(0, '127.0.0.1');
  await once(vendor, 'listening');
  front = await startClosingFront({
    mode: 'pass',
    upstreamPort: (vendor.address() as AddressInfo).port,
  });
});

afterAll(async () => {
  await client.close();
  await front.stop();
  vendor.close();
});

const call = (): UpstreamRequest => ({
  baseUrl: front.url,
  path: '/v1/chat/completions',
  headers: { 'content-type': 'application/json' },
  body: Buffer.from('{"model":"m"}'),
});

describe('the last look before a write', () => {
  it('fails a call as not sent when its kept-alive socket was closed during the turn before', async () => {
    const first = await client.request(call()).response;
    await first.body.bytes();
    await new Promise((resolve) => setTimeout(resolve, 20)); // the socket is idle in the pool
    // In a poll-phase callback: undici takes the idle socket (and checks it on the next turn),
    // and the vendor closes it while the loop is still busy in this phase.
    const second = await new Promise<UpstreamCall>((resolve) => {
      stat('.', () => {
        const started = client.request(call());
        const closedBefore = Atomics.load(front.closed, 0);
        front.closeAll();
        Atomics.wait(front.closed, 0, closedBefore, 5_000);
        resolve(started);
      });
    });
    await expect(second.response).rejects.toMatchObject({ code: 'GW_UPSTREAM_NOT_SENT' });
    expect(Atomics.load(front.closed, 0)).toBe(1);
    expect(await front.stats()).toEqual({ accepted: 1, closedUnread: 0, requests: 1 });
    // The next call goes on a new connection.
    const third = await client.request(call()).response;
    expect(third.statusCode).toBe(200);
    await third.body.bytes();
  });

  // The one-slot hand-over (`aboutToWrite`, then `sendHeaders`) relies on undici starting a
  // request (onRequestStart) and publishing its sendHeaders next, in the same synchronous run,
  // with no other request's start between. An undici that changed this would make the last
  // look judge the wrong call, silently: this fails first.
  it("undici publishes a request's sendHeaders right after starting it, in the same run", async () => {
    const pool = new Pool(`http://127.0.0.1:${(vendor.address() as AddressInfo).port}`, {
      connections: 4,
      pipelining: 1,
      keepAliveTimeout: 4_000,
    });
    let started: string | undefined;
    const checked: string[] = [];
    const mismatches: Array<[string | undefined, string]> = [];
    const onSendHeaders = (message: unknown): void => {
      // undici 7 keeps a request's headers as [name, value, name, value, …].
      const { headers } = (message as { request: { headers: string[] } }).request;
      const at = headers.indexOf('x-call');
      const id = at >= 0 ? headers[at + 1] : undefined;
      if (id === undefined) return; // another test's request
      if (started !== id) mismatches.push([started, id]);
      checked.push(id);
      started = undefined;
    };
    dc.subscribe('undici:client:sendHeaders', onSendHeaders);
    try {
      const send = (id: string): Promise<void> =>
        new Promise((resolve, reject) => {
          const handler: Dispatcher.DispatchHandler = {
            onRequestStart() {
              started = id;
              // Anything that ran between the start and the headers would see this cleared.
              queueMicrotask(() => {
                if (started === id) started = undefined;
              });
            },
            onResponseStart() {},
            onResponseData() {},
            onResponseEnd: () => resolve(),
            onResponseError: (_controller, error) => reject(error),
          };
          pool.dispatch(
            {
              method: 'POST',
              path: '/v1/chat/completions',
              headers: { 'content-type': 'application/json', 'x-call': id },
              body: '{"model":"m"}',
            },
            handler,
          );
        });
      // New connections and kept-alive ones, with requests queued behind each.
      for (let round = 0; round < 5; round += 1) {
        await Promise.all(Array.from({ length: 40 }, (_, n) => send(`call-${round * 40 + n}`)));
      }
    } finally {
      dc.unsubscribe('undici:client:sendHeaders', onSendHeaders);
      await pool.close();
    }
    expect(checked).toHaveLength(200);
    expect(mismatches).toEqual([]);
  });
});
