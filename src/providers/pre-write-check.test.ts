// The last look before a request is written, against a real front on its own thread: a
// kept-alive socket the vendor closes during the loop turn before its reuse (the close is not
// read before undici writes) fails the call as not sent, and nothing reaches the vendor.
import { stat } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
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
});
