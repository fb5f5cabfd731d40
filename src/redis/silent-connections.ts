// Connections that went silent for good are replaced. A connection cut off without a reset (a
// network partition, a failed-over master that vanished under its address) answers nothing
// and reports nothing: ioredis would keep writing to it until TCP gives up (about 15 minutes),
// and every command on it would fail at REDIS_TIMEOUT_MS meanwhile, long after Redis was
// reachable again on a new connection. A watch per client, on a timer (no cost per command):
// when the oldest command a connection waits for has not moved for twice the bound of time the
// event loop was free to read its answer, the connection is dropped and ioredis connects again.
// What it had sent without an answer it sends again on the new connection, in order; each of
// those commands is safe to run twice (holds and releases are idempotent, settle has its
// marker: decision 318). A Redis that only paused (a stopped host resumed within the bound)
// keeps its connection.
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { STALL_MS } from '../stall-tolerant-timeout.js';
import { isCluster, type RedisClient } from './connect.js';

interface Watched {
  head: unknown;
  silentForMs: number;
}

export interface SilenceWatch {
  stop(): void;
}

/**
 * Watches every connection of `redis` (each node's on a cluster) and reconnects one whose
 * oldest unanswered command has waited `2 × boundMs` of responsive loop time.
 */
export function replaceSilentConnections(
  redis: RedisClient,
  boundMs: number,
  onReplace: (connection: Redis, silentForMs: number) => void,
): SilenceWatch {
  return watchConnections(
    () => (isCluster(redis) ? redis.nodes('all') : [redis]),
    boundMs,
    onReplace,
  );
}

/** The same watch over whatever connections `connections()` names at each tick. */
export function watchConnections(
  connections: () => readonly Redis[],
  boundMs: number,
  onReplace: (connection: Redis, silentForMs: number) => void,
): SilenceWatch {
  const watched = new WeakMap<Redis, Watched>();
  const intervalMs = Math.max(50, Math.floor(boundMs / 2));
  let lastTickAtMs = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    const elapsedMs = now - lastTickAtMs;
    lastTickAtMs = now;
    // A tick later than STALL_MS means the loop was stalled: nothing is judged across it.
    const stalled = elapsedMs > intervalMs + STALL_MS;
    for (const connection of connections()) {
      const head = connection.commandQueue.peekFront();
      const state = watched.get(connection);
      if (head === undefined || stalled || !state || state.head !== head) {
        // Nothing waited for, a stall (the answer may be unread), or it moved: start over.
        watched.set(connection, { head, silentForMs: 0 });
        continue;
      }
      state.silentForMs += elapsedMs;
      if (state.silentForMs >= 2 * boundMs) {
        watched.delete(connection);
        onReplace(connection, state.silentForMs);
        connection.disconnect(true);
      }
    }
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** A watch's `onReplace` that warns with `message`, naming the node and how long it was silent. */
export function warnOfReplacement(
  logger: Logger,
  message: string,
): (connection: Redis, silentForMs: number) => void {
  return (connection, silentForMs) => {
    const { host, port } = connection.options;
    logger.warn({ host, port, silentForMs }, message);
  };
}
