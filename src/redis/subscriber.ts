// The connection that listens to pub/sub (cache invalidations). On a single Redis it is a plain
// client of its own. On a cluster, PUBLISH reaches every node, so one plain connection to any
// node hears every message: this one holds a connection to one node at a time and moves to the
// next known node when it loses one for good. Every (re)connection emits 'ready' once its
// channels are subscribed again, so the listener knows messages may have been missed meanwhile
// — ioredis' own cluster subscriber moves between nodes without a word, which would leave
// revoked entries in the local caches.
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { connectRedis } from './connect.js';
import { watchConnections, type SilenceWatch } from './silent-connections.js';
import type { RedisNode, RedisTarget } from './target.js';

/** What a pub/sub listener needs of its connection (an ioredis client has all of it). */
export interface Subscriber {
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): this;
  on(event: 'ready', listener: () => void): this;
  quit(): Promise<unknown>;
  /** Drops the connection at once (a quit that got no answer). */
  disconnect(): void;
}

/** Reconnection attempts on one node before moving to the next. */
const ATTEMPTS_PER_NODE = 3;
const CONNECT_TIMEOUT_MS = 2000;

/** A subscriber on the target; on a cluster, `nodes()` says which nodes to try, in order. */
export function connectSubscriber(
  target: RedisTarget,
  nodes: () => readonly RedisNode[],
  connectionName = 'gw-subscriber',
): Subscriber & {
  readonly connectedTo: () => RedisNode | undefined;
  /** The connection it listens on now (for keepSubscriberAlive). */
  readonly connections: () => readonly Redis[];
} {
  if (target.kind === 'single') {
    const client = connectRedis(target, { maxRetriesPerRequest: null, connectionName }) as Redis;
    return Object.assign(client, {
      connectedTo: () => ({ host: client.options.host!, port: client.options.port! }),
      connections: () => [client],
    });
  }
  return new NodeHoppingSubscriber(nodes, {
    connectionName,
    ...(target.username !== undefined && { username: target.username }),
    ...(target.password !== undefined && { password: target.password }),
    ...(target.tls && { tls: {} }),
  });
}

interface NodeCredentials {
  readonly connectionName: string;
  readonly username?: string;
  readonly password?: string;
  readonly tls?: object;
}

class NodeHoppingSubscriber extends EventEmitter implements Subscriber {
  private connection: Redis | undefined;
  private node: RedisNode | undefined;
  private readonly channels = new Set<string>();
  private nextNode = 0;
  private closed = false;

  constructor(
    private readonly nodes: () => readonly RedisNode[],
    private readonly credentials: NodeCredentials,
  ) {
    super();
    this.open();
  }

  connectedTo(): RedisNode | undefined {
    return this.connection?.status === 'ready' ? this.node : undefined;
  }

  connections(): readonly Redis[] {
    return this.connection ? [this.connection] : [];
  }

  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    const connection = this.connection!;
    if (connection.status === 'ready') await connection.subscribe(channel);
    else await new Promise<void>((resolve) => this.once('ready', () => resolve()));
  }

  async quit(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    if (!connection || connection.status === 'end') return;
    await connection.quit().catch(() => connection.disconnect());
  }

  disconnect(): void {
    this.closed = true;
    this.connection?.disconnect();
  }

  private open(): void {
    const candidates = this.nodes();
    if (candidates.length === 0) throw new Error('no Redis Cluster node to subscribe on');
    const node = candidates[this.nextNode % candidates.length]!;
    this.nextNode += 1;
    const connection = new Redis({
      host: node.host,
      port: node.port,
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: null,
      autoResubscribe: false, // done on 'ready' below, before announcing it
      // A node that stays away is left for the next one (below), not retried forever.
      retryStrategy: (times) => (times > ATTEMPTS_PER_NODE ? null : times * 200),
      ...this.credentials,
    });
    this.connection = connection;
    this.node = node;
    // Connection errors end in 'end' below; they are not the listener's to handle.
    connection.on('error', () => undefined);
    connection.on('message', (channel: string, message: string) =>
      this.emit('message', channel, message),
    );
    // Announced once the channels are subscribed (again): a listener that then forgets what it
    // cached has missed nothing after that point.
    connection.on('ready', () => {
      if (this.channels.size === 0) {
        this.emit('ready');
        return;
      }
      connection.subscribe(...this.channels).then(
        () => this.emit('ready'),
        () => connection.disconnect(true), // try again (the retry strategy decides where)
      );
    });
    connection.once('end', () => {
      if (this.closed || this.connection !== connection) return;
      setTimeout(() => this.reopen(), 100).unref();
    });
  }

  private reopen(): void {
    if (this.closed) return;
    this.open();
  }
}

/**
 * Keeps a subscriber honest about its connection. A subscriber only listens: cut off without a
 * reset (a partition, a failed-over node that vanished), nothing it waits for ever fails, TCP
 * never notices an idle connection, and the instance would miss every invalidation from then
 * on, serving revoked keys and old caps until each cache entry's TTL (minutes) — with no
 * 'ready' to tell it to drop what it holds. So it PINGs every half bound (allowed while
 * subscribed), and a connection whose PING has gone unanswered for twice the bound is dropped
 * (watchConnections): the reconnection subscribes again and emits 'ready', and the caches are
 * dropped. One PING per half bound per instance; nothing per request.
 */
export function keepSubscriberAlive(
  subscriber: { readonly connections: () => readonly Redis[] },
  boundMs: number,
  onReplace: (connection: Redis, silentForMs: number) => void,
): SilenceWatch {
  const pings = setInterval(
    () => {
      for (const connection of subscriber.connections()) {
        // One PING waiting at a time: the watch judges the oldest.
        if (connection.status === 'ready' && connection.commandQueue.length === 0) {
          connection.ping().catch(() => undefined);
        }
      }
    },
    Math.max(50, Math.floor(boundMs / 2)),
  );
  pings.unref();
  const watch = watchConnections(() => subscriber.connections(), boundMs, onReplace);
  return {
    stop: () => {
      clearInterval(pings);
      watch.stop();
    },
  };
}
