// A Redis that hangs, and a stalled event loop: what the command time-out and the silent
// connection watch (src/redis/) must tell apart.
import { createServer, type Socket } from 'node:net';

export interface SilentRedis {
  readonly port: number;
  /** Every connection it took (open or closed since), in order. */
  readonly sockets: ReadonlySet<Socket>;
  /** Closes it and every connection it holds. */
  close(): Promise<void>;
}

/** On 127.0.0.1, a free port: accepts connections, reads every command, answers none. */
export async function startSilentRedis(): Promise<SilentRedis> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Keeps the event loop busy for `ms`: nothing is read from any socket meanwhile. */
export function stallLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}
