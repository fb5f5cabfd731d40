// The one place a Redis client is made: a single Redis (REDIS_URL) or a Redis Cluster
// (REDIS_CLUSTER_NODES) through ioredis' Cluster client, for the gateway, its usage writer
// thread, the CLI, the tests and the benches alike. Callers take a RedisClient and stay out of
// the difference, except where a command must be split per hash slot or run on every master
// (the helpers below): a multi-key command or a transaction must stay in one slot on a cluster,
// and an ioredis pipeline on a cluster goes to one node.
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { installStallTolerantTimeout } from './command-timeout.js';
import type { Logger } from '../log.js';
import type { RedisNode, RedisTarget } from './target.js';

export type RedisClient = Redis | Cluster;

export interface ConnectOptions {
  /** ioredis' maxRetriesPerRequest: null for connections that must never give up a command. */
  readonly maxRetriesPerRequest: number | null;
  /** ioredis auto-pipelining (off for the request path: scripts coalesce their own writes). */
  readonly autoPipelining?: boolean;
  /** CLIENT SETNAME of each connection (what `CLIENT LIST` shows). */
  readonly connectionName?: string;
  /**
   * Gives a command up after this long without an answer (REDIS_TIMEOUT_MS; a stalled event
   * loop does not count, src/redis/command-timeout.ts); unset: waits as long as it takes.
   * The command stays on its connection and may still run when Redis answers again.
   */
  readonly commandTimeoutMs?: number;
  /**
   * Told of each error ioredis reports on the client (a connection refused or lost, a command
   * given up on): the caller's own answer to each command says what failed it, so these are
   * for the log. Unset: not reported (ioredis would print each to stderr, outside the log).
   */
  readonly onError?: (error: Error) => void;
}

/** A new client on the target. */
export function connectRedis(target: RedisTarget, options: ConnectOptions): RedisClient {
  if (options.commandTimeoutMs !== undefined) installStallTolerantTimeout();
  const common = {
    maxRetriesPerRequest: options.maxRetriesPerRequest,
    ...(options.connectionName !== undefined && { connectionName: options.connectionName }),
    // Each node's connection of a cluster applies it too (redisOptions).
    ...(options.commandTimeoutMs !== undefined && { commandTimeout: options.commandTimeoutMs }),
  };
  const client = connectTo(target, options, common);
  client.on('error', options.onError ?? (() => undefined));
  return client;
}

function connectTo(
  target: RedisTarget,
  options: ConnectOptions,
  common: Pick<RedisOptions, 'maxRetriesPerRequest' | 'connectionName' | 'commandTimeout'>,
): RedisClient {
  if (target.kind === 'single') {
    return new Redis(target.url, {
      ...common,
      ...(options.autoPipelining && { enableAutoPipelining: true }),
    });
  }
  return new Cluster(
    target.nodes.map((node) => ({ host: node.host, port: node.port })),
    {
      redisOptions: {
        ...common,
        ...(target.username !== undefined && { username: target.username }),
        ...(target.password !== undefined && { password: target.password }),
        ...(target.tls && { tls: {} }),
      },
      enableAutoPipelining: options.autoPipelining ?? false,
      // Commands issued while the cluster (re)discovers its slots wait for it, as a single
      // client's offline queue does; maxRetriesPerRequest bounds each node connection.
      enableOfflineQueue: true,
      // Names, not resolved addresses, for TLS certificates (managed clusters announce names).
      ...(target.tls && { dnsLookup: (address, lookup) => lookup(null, address) }),
    },
  );
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/**
 * The connections that hold the data: the client itself on a single Redis, one per master on
 * a cluster. Whatever must see every key (SCAN, SCRIPT LOAD, a health check) runs on each.
 */
export function masters(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes('master') : [redis];
}

/** Every node a client may reach now: the seeds and what the cluster reported since. */
export function knownNodes(redis: RedisClient, seeds: readonly RedisNode[] = []): RedisNode[] {
  const found = new Map<string, RedisNode>();
  for (const node of seeds) found.set(`${node.host}:${node.port}`, node);
  for (const connection of isCluster(redis) ? redis.nodes('all') : [redis]) {
    const { host, port } = connection.options;
    if (host !== undefined && port !== undefined) found.set(`${host}:${port}`, { host, port });
  }
  return [...found.values()];
}

/** The hash slot of a key (the same on every cluster: CRC16 of the hash tag, mod 16384). */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/**
 * Splits keys into groups a multi-key command (MGET, DEL k1 k2, XREADGROUP … STREAMS k1 k2)
 * can take: all of them on a single Redis, one group per hash slot on a cluster.
 */
export function slotGroups(redis: RedisClient, keys: readonly string[]): string[][] {
  if (!isCluster(redis)) return keys.length === 0 ? [] : [[...keys]];
  return groupBy(keys, (key) => String(keySlot(key)));
}

/**
 * Splits keys into groups one ioredis pipeline can carry: all of them on a single Redis; on a
 * cluster, the keys of the slots served by one node (ioredis sends a pipeline to one node and
 * refuses one that spans nodes). Slots not mapped yet go alone.
 */
export function pipelineGroups(redis: RedisClient, keys: readonly string[]): string[][] {
  if (!isCluster(redis)) return keys.length === 0 ? [] : [[...keys]];
  const slots = redis.slots;
  return groupBy(keys, (key) => {
    const slot = keySlot(key);
    return slots[slot]?.join(',') ?? `slot:${slot}`;
  });
}

function groupBy(keys: readonly string[], groupOf: (key: string) => string): string[][] {
  const groups = new Map<string, string[]>();
  for (const key of keys) {
    const group = groupOf(key);
    const members = groups.get(group);
    if (members) members.push(key);
    else groups.set(group, [key]);
  }
  return [...groups.values()];
}

/**
 * Every key matching `pattern`, page by page, on every master (SCAN sees one node's keys
 * only). `onPage` gets each node's page with that node's connection, for per-key follow-ups.
 */
export async function scanKeys(
  redis: RedisClient,
  pattern: string,
  onPage: (keys: string[], node: Redis) => Promise<void>,
): Promise<void> {
  for (const node of masters(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await onPage(keys, node);
    } while (cursor !== '0');
  }
}

/**
 * Deletes every key matching `pattern` on every master; one UNLINK per key, pipelined per node
 * (several keys in one UNLINK must share a slot on a cluster). Returns how many it deleted.
 */
export async function unlinkMatching(redis: RedisClient, pattern: string): Promise<number> {
  let deleted = 0;
  await scanKeys(redis, pattern, async (keys, node) => {
    const pipeline = node.pipeline();
    for (const key of keys) pipeline.unlink(key);
    const replies = (await pipeline.exec()) ?? [];
    for (const [error, count] of replies) if (!error) deleted += Number(count);
  });
  return deleted;
}

/** True when every master answers PING (a cluster serves no shard whose master is down). */
export async function pingAll(redis: RedisClient): Promise<boolean> {
  try {
    const replies = await Promise.all(masters(redis).map((node) => node.ping()));
    return replies.length > 0 && replies.every((reply) => reply === 'PONG');
  } catch {
    return false;
  }
}

/** Waits until the client is ready (a cluster: its slots are known), or fails after `ms`. */
export async function whenReady(redis: RedisClient, ms = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis not ready within ${ms} ms`));
    }, ms);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/**
 * Quits a connection, or drops it when QUIT is not answered within `ms` (a Redis that hangs
 * must not hold a shutdown): for the connections without REDIS_TIMEOUT_MS, the subscriber's.
 */
export async function quitWithin(
  connection: { quit(): Promise<unknown>; disconnect(): void },
  ms: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(resolve, ms, 'late');
  });
  try {
    const outcome = await Promise.race([
      connection.quit().then(
        () => 'quit' as const,
        () => 'failed' as const,
      ),
      late,
    ]);
    if (outcome !== 'quit') connection.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/** Quits a client; one that never connected (or already ended) is just dropped. */
export async function quitRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * An `onError` that warns with `message` and the error's code, at most once per `everyMs`
 * (a Redis that is away fails every reconnection attempt), counting those it left out.
 */
export function warnOfErrors(
  logger: Logger,
  message: string,
  everyMs = 10_000,
): (error: Error) => void {
  let lastMs = -Infinity;
  let unreported = 0;
  return (error) => {
    const now = Date.now();
    if (now - lastMs < everyMs) {
      unreported += 1;
      return;
    }
    lastMs = now;
    const code = (error as NodeJS.ErrnoException).code;
    logger.warn({ code, reason: error.message, alsoSinceLast: unreported }, message);
    unreported = 0;
  };
}
