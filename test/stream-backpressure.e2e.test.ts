// A client that stops reading a stream stops the vendor too: the gateway does not buffer a
// vendor's stream without bound for a slow client. A vendor_b stub writes a 128 MB stream as
// fast as its socket takes it; while the client reads nothing, the stub's writes must stall
// (kernel socket buffers hold a few tens of MB at most), and once the client reads again the
// whole stream arrives, finished by [DONE], and is settled.
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import {
  seed,
  startGatewayProcess,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('backpressure');
let org: SeededOrg;
let gateway: GatewayProcess;

const STREAM_BYTES = 128 * 1024 * 1024;
const CHUNK = `data: ${JSON.stringify({
  id: 'chatcmpl-stub',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: { content: 'x'.repeat(1000) } }],
  usage: null,
})}\n\n`;
const USAGE_CHUNK = `data: ${JSON.stringify({
  id: 'chatcmpl-stub',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 9, completion_tokens: 4242, total_tokens: 4251 },
})}\n\n`;
let stubBytesWritten = 0;

/** vendor_b stub: streams STREAM_BYTES of chunks, honouring its socket's backpressure. */
const stub = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const pump = (): void => {
      while (stubBytesWritten < STREAM_BYTES) {
        stubBytesWritten += CHUNK.length;
        if (!response.write(CHUNK)) {
          response.once('drain', pump);
          return;
        }
      }
      response.end(`${USAGE_CHUNK}data: [DONE]\n\n`);
    };
    pump();
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  const { port } = stub.address() as AddressInfo;
  [org, gateway] = await Promise.all([
    seed(env),
    // Its own process: the stall is measured from outside, undisturbed by the test's event loop.
    startGatewayProcess({ ...env, VENDOR_B_BASE_URL: `http://127.0.0.1:${port}` }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  stub.closeAllConnections();
  await new Promise<void>((resolve) => stub.close(() => resolve()));
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a streaming client that stops reading', () => {
  it('stalls the vendor instead of buffering its stream, then gets all of it once it reads', async () => {
    const body = JSON.stringify({
      model: 'vendor_b/gpt-4o-mini',
      stream: true,
      max_tokens: 10_000,
      messages: [{ role: 'user', content: 'a long answer, please' }],
    });
    const url = new URL(gateway.url);
    const socket: Socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.pause();
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\n` +
        `authorization: Bearer ${org.api_key}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );

    // The client reads nothing: the stub may fill the sockets on the way, then must stall.
    // (First wait for the stream to start: a loaded machine may take a while to get there.)
    for (let waited = 0; waited < 20_000 && stubBytesWritten === 0; waited += 100) {
      await sleep(100);
    }
    // Stalled = no byte written for 2 s in a row (a loaded machine can pause a busy stream
    // for shorter spells without it being stalled).
    let previous = -1;
    let unchangedMs = 0;
    for (let waited = 0; waited < 30_000 && unchangedMs < 2_000; waited += 250) {
      unchangedMs = stubBytesWritten === previous ? unchangedMs + 250 : 0;
      previous = stubBytesWritten;
      await sleep(250);
    }
    const writtenWhilePaused = stubBytesWritten;
    expect(writtenWhilePaused).toBeGreaterThan(0);
    expect(writtenWhilePaused).toBeLessThan(STREAM_BYTES / 2);
    await sleep(1_000);
    expect(stubBytesWritten).toBe(writtenWhilePaused);

    // Reading again: the rest flows, and the stream ends with [DONE].
    let received = '';
    let receivedBytes = 0;
    let tail = '';
    let requestId: string | undefined;
    await new Promise<void>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        receivedBytes += chunk.length;
        const text = chunk.toString('latin1');
        if (requestId === undefined) {
          received += text;
          requestId = /x-request-id: ([^\r\n]+)/i.exec(received)?.[1];
        }
        tail = (tail + text).slice(-64);
        if (tail.includes('data: [DONE]')) resolve();
      });
      socket.on('error', reject);
      socket.resume();
    });
    socket.destroy();
    expect(receivedBytes).toBeGreaterThan(STREAM_BYTES);
    const row = await ledgerRow<{ status: string; output_tokens: number }>(
      db,
      requestId ?? null,
      'status, output_tokens',
    );
    expect(row).toEqual({ status: 'completed', output_tokens: 4242 });
  }, 60_000);
});
