// A relay in front of the test Redis that can hold back what Redis sends to a gateway's
// invalidation subscriber (the connection named `<prefix>:invalidations`,
// src/composition/redis.ts), and only to it: the gateway's commands go through as usual, but
// the pub/sub messages it publishes reach its own subscriber only on release. A test sees what
// an instance does before its own message comes back, whatever the machine's load.
import net from 'node:net';
import { TEST_REDIS_URL } from './env.js';

export interface SubscriberRelay {
  /** The Redis URL through the relay. */
  readonly url: string;
  /** From now on, what Redis sends to the subscriber waits. */
  hold(): void;
  /** Sends what was held, in order, and stops holding. */
  release(): void;
  close(): Promise<void>;
}

export async function startSubscriberRelay(prefix: string): Promise<SubscriberRelay> {
  const target = new URL(TEST_REDIS_URL);
  const subscriberName = Buffer.from(`${prefix}:invalidations`);
  const sockets = new Set<net.Socket>();
  const subscribers = new WeakSet<net.Socket>();
  const held: Array<{ to: net.Socket; chunk: Buffer }> = [];
  let holding = false;
  const listener = net.createServer((client) => {
    const server = net.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      // ioredis names its connection (CLIENT SETNAME) before anything else it sends.
      if (chunk.includes(subscriberName)) subscribers.add(client);
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (holding && subscribers.has(client)) held.push({ to: client, chunk });
      else client.write(chunk);
    });
    client.on('end', () => server.end());
    server.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const through = new URL(TEST_REDIS_URL); // its credentials and database, if any
  through.hostname = '127.0.0.1';
  through.port = String((listener.address() as net.AddressInfo).port);
  return {
    url: through.href,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const { to, chunk } of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
