// A TCP relay in front of a real server that can be frozen: while frozen it passes nothing on
// from either side (bytes or a connection's end) and opens nothing new, so the server looks
// hung (connections stay open, no answer comes), not down (which would refuse at once).
// Thawed, everything held goes through.
import net from 'node:net';
import { TEST_DATABASE_URL } from './env.js';

export interface FreezableRelay {
  readonly port: number;
  freeze(): void;
  thaw(): void;
  /**
   * The connections open now go silent for good (a partition, a failed-over primary that
   * vanished: no reset ever comes); new ones go through.
   */
  strandOpen(): void;
  /**
   * A COMMIT whose answer is lost (Postgres only): on the next connection that sends a
   * statement containing `after`, its next COMMIT goes through and Postgres commits it, but
   * the answer never comes back: the connection is cut when it arrives. `commitReaches`
   * false: the connection is cut as the COMMIT is sent, which never reaches Postgres.
   */
  loseCommitAnswerAfter(after: string, options?: { readonly commitReaches?: boolean }): void;
  close(): Promise<void>;
}

export async function startFreezableRelay(target: {
  host: string;
  port: number;
}): Promise<FreezableRelay> {
  const sockets = new Set<net.Socket>();
  // Bytes (and ends) read while frozen, each with where it goes, sent in order on thaw.
  const held: Array<{ to: net.Socket; chunk: Buffer | 'end' }> = [];
  const waiting: net.Socket[] = [];
  let frozen = false;
  const stranded = new WeakSet<net.Socket>();
  let loseAfter: string | undefined;
  let commitReaches = true;
  // Client connections that sent `loseAfter`, and servers whose next answer (COMMIT's) is lost.
  const losing = new WeakSet<net.Socket>();
  const answerLost = new WeakSet<net.Socket>();
  const forward = (from: net.Socket, to: net.Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (stranded.has(from)) return;
      if (answerLost.has(from)) {
        from.destroy();
        to.destroy();
        return;
      }
      if (loseAfter !== undefined && chunk.includes(loseAfter)) {
        losing.add(from);
        loseAfter = undefined;
      } else if (losing.has(from) && chunk.includes('COMMIT\0')) {
        losing.delete(from);
        if (!commitReaches) {
          from.destroy();
          to.destroy();
          return;
        }
        answerLost.add(to);
      }
      if (frozen) held.push({ to, chunk });
      else to.write(chunk);
    });
    // Frozen, an end is held like the bytes (a hung server never answers a goodbye). A
    // stranded connection's end still goes through: the side that gave up on it closes it, as
    // the tests expect of a connection replaced (a subscriber's old one must not stay
    // subscribed on the server and take the messages meant for its replacement).
    from.on('end', () => {
      if (frozen && !stranded.has(from)) held.push({ to, chunk: 'end' });
      else to.end();
    });
  };
  const relay = (client: net.Socket): void => {
    const server = net.connect(target.port, target.host);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    forward(client, server);
    forward(server, client);
  };
  const listener = net.createServer((client) => {
    if (frozen) waiting.push(client);
    else relay(client);
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  return {
    port: (listener.address() as net.AddressInfo).port,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const { to, chunk } of held.splice(0)) {
        if (to.destroyed) continue;
        if (chunk === 'end') to.end();
        else to.write(chunk);
      }
      for (const client of waiting.splice(0)) relay(client);
    },
    strandOpen() {
      for (const socket of sockets) stranded.add(socket);
    },
    loseCommitAnswerAfter(after, options = {}) {
      loseAfter = after;
      commitReaches = options.commitReaches ?? true;
    },
    async close() {
      for (const socket of [...sockets, ...waiting]) socket.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

/** A relay in front of the test database (or `databaseUrl`'s), and its URL through it. */
export async function relayedTestDatabase(
  databaseUrl = TEST_DATABASE_URL,
): Promise<{ relay: FreezableRelay; url: string }> {
  const target = new URL(databaseUrl);
  const relay = await startFreezableRelay({
    host: target.hostname,
    port: Number(target.port || 5432),
  });
  target.port = String(relay.port);
  return { relay, url: target.href };
}
