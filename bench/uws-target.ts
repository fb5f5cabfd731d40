// What the bench's own uWS servers (the passthrough, the design floor) share: reading a
// request's body, and listening on loopback with the port announced as JSON on stdout (which
// bench/targets.ts waits for).
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { loadNativeUws } from '../src/http/uws.js';

export const uws = loadNativeUws();

/** Collects the body (uWS neuters each chunk after its callback) and hands it over whole. */
export function readBody(res: HttpResponse, onBody: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) onBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
}

export function listenOnLoopback(app: TemplatedApp, name: string): void {
  app.listen('127.0.0.1', Number(process.env.PORT ?? 0), (socket) => {
    if (!socket) {
      process.stderr.write(`${name}: could not listen\n`);
      process.exit(1);
    }
    process.stdout.write(`${JSON.stringify({ port: uws.us_socket_local_port(socket) })}\n`);
  });
}
