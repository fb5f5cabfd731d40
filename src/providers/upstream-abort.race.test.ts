// Calls abandoned at every moment around their start (before dispatch, while queued, in the
// same turn, a microtask, a tick, an immediate or a few ms later), against a raw vendor that
// answers after varying delays and closes some kept-alive connections just after an answer.
// What the vendor received is compared with what each call said: a call that ended unwritten
// (charged nothing, decision 312 and 316) never reached the vendor, no request reached it
// twice (decision 251), and every request it got was whole (its content-length's bytes).
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELEASED_BODY_BYTES, UpstreamClient } from './upstream.js';

interface Seen {
  readonly id: string;
  readonly declared: number;
  got: number;
}

const seen: Seen[] = [];
const sockets = new Set<Socket>();
/** A fixed sequence, so a failure replays. */
let state = 12345;
const random = (): number => {
  state = (state * 1103515245 + 12345) & 0x7fffffff;
  return state / 0x7fffffff;
};

const vendor = createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => undefined);
  let buffer = Buffer.alloc(0);
  let current: Seen | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (!current) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString('latin1');
        buffer = buffer.subarray(end + 4);
        current = {
          id: /x-call: (\S+)/i.exec(head)?.[1] ?? '?',
          declared: Number(/content-length: (\d+)/i.exec(head)?.[1] ?? -1),
          got: 0,
        };
        seen.push(current);
      }
      const take = Math.min(buffer.length, current.declared - current.got);
      current.got += take;
      buffer = buffer.subarray(take);
      if (current.got < current.declared) return;
      current = undefined;
      const r = random();
      const answer = (): void => {
        if (socket.destroyed) return;
        if (r < 0.15) {
          socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
          return;
        }
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
        // A kept-alive connection closed just after its answer, as undici may reuse it.
        if (r > 0.8) setTimeout(() => socket.destroy(), Math.floor(random() * 3));
      };
      if (r < 0.5) setImmediate(answer);
      else setTimeout(answer, Math.floor(random() * 4));
    }
  });
});

let baseUrl = '';

beforeAll(async () => {
  vendor.listen(0, '127.0.0.1');
  await once(vendor, 'listening');
  baseUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
});

afterAll(() => {
  for (const socket of sockets) socket.destroy();
  vendor.close();
});

const abandon: Array<((abort: () => void) => void) | undefined> = [
  undefined,
  (abort) => abort(),
  (abort) => queueMicrotask(abort),
  (abort) => process.nextTick(abort),
  (abort) => setImmediate(abort),
  (abort) => setTimeout(abort, Math.floor(random() * 5)),
];

describe('UpstreamClient, calls abandoned around their start', () => {
  it('never calls unwritten a request the vendor got, sends none twice, and none cut short', async () => {
    const upstream = new UpstreamClient(5_000, 2);
    const written = new Map<string, boolean>();
    const answered = new Set<string>();
    const lengths = new Map<string, number>();
    const run = async (n: number): Promise<void> => {
      const id = `call-${n}`;
      const prompt = 'p'.repeat(random() < 0.4 ? RELEASED_BODY_BYTES + 100 : 50);
      const body = Buffer.from(JSON.stringify({ prompt }));
      lengths.set(id, body.length);
      const call = upstream.request({
        baseUrl,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'x-call': id },
        body,
      });
      abandon[Math.floor(random() * abandon.length)]?.(() => call.abort());
      try {
        await (await call.response).body.bytes();
        answered.add(id);
      } catch {
        // abandoned, or its connection closed under it
      }
      // Read as the failover loop reads it, once the call has ended.
      written.set(id, call.written);
    };
    const running: Promise<void>[] = [];
    for (let n = 0; n < 2_000; n += 1) {
      running.push(run(n));
      if (n % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(running);
    await new Promise((resolve) => setTimeout(resolve, 200)); // bytes still on their way
    await upstream.close();

    expect(seen.filter(({ id }) => written.get(id) === false)).toEqual([]);
    const times = new Map<string, number>();
    for (const { id } of seen) times.set(id, (times.get(id) ?? 0) + 1);
    expect([...times].filter(([, count]) => count > 1)).toEqual([]);
    // Never an empty or shortened body under the prompt's content-length (a released prompt).
    expect(seen.filter(({ id, declared }) => declared !== lengths.get(id))).toEqual([]);
    expect(seen.filter(({ id, declared, got }) => answered.has(id) && got !== declared)).toEqual(
      [],
    );
    // The mix covered both sides: calls answered, and calls abandoned unwritten.
    expect(seen.length).toBeGreaterThan(100);
    expect([...written.values()].filter((w) => !w).length).toBeGreaterThan(100);
  }, 60_000);
});
