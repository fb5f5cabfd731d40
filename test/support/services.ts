// Direct handles on the real Postgres and Redis (or Redis Cluster), for assertions and cleanup.
import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { connectRedis, unlinkMatching, type RedisClient } from '../../src/redis/connect.js';
import { TEST_DATABASE_URL, testRedisTarget } from './env.js';

export function testDb(databaseUrl = TEST_DATABASE_URL): pg.Pool {
  return new pg.Pool({ connectionString: databaseUrl, max: 4 });
}

/** A client on the tests' Redis: the cluster when TEST_REDIS_CLUSTER_NODES is set. */
export function testRedis(): RedisClient {
  return connectRedis(testRedisTarget(), { maxRetriesPerRequest: 20 });
}

/** Deletes every key under a test's prefix (on every master of a cluster). */
export async function deletePrefix(redis: RedisClient, prefix: string): Promise<void> {
  await unlinkMatching(redis, `${prefix}:*`);
}

/**
 * Polls until `probe` returns a value that is not undefined, or fails after `timeoutMs` (by
 * default as long as a browser test's waits: a loaded machine stretches what takes a moment).
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A port free on 127.0.0.1 now (for a gateway that must be told one, not given 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Sends a request until its answer is no longer `asBefore`, and returns that first other answer.
 * A change made elsewhere (a revocation, a block, a CLI write) reaches a gateway instance by
 * pub/sub a moment later, and a loaded machine stretches that moment: until then the instance
 * answers as before the change. The caller asserts what the new answer must be.
 */
export function firstChangedAnswer<T>(
  send: () => Promise<T>,
  asBefore: (answer: T) => boolean,
  timeoutMs?: number,
): Promise<T> {
  return eventually(async () => {
    const answer = await send();
    return asBefore(answer) ? undefined : answer;
  }, timeoutMs);
}

/** The first answer to `send` that is not a 200 (see firstChangedAnswer). */
export const firstNot200 = <T extends { readonly status: number }>(
  send: () => Promise<T>,
  timeoutMs?: number,
): Promise<T> => firstChangedAnswer(send, (answer) => answer.status === 200, timeoutMs);
