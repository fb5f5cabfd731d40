// One isolated context per test file: its own Redis key prefix (and so its own accounts,
// streams and caches), the environment for the gateway processes and CLI calls it starts,
// and handles on the real Postgres and Redis. The keys under the prefix are deleted and the
// handles closed after the file, once its own afterAll hooks (stopping gateways) have run.
import type { RedisClient } from '../../src/redis/connect.js';
import type pg from 'pg';
import { afterAll } from 'vitest';
import { baseEnv, uniquePrefix } from './env.js';
import { deletePrefix, testDb, testRedis } from './services.js';

export interface TestContext {
  readonly prefix: string;
  readonly env: Record<string, string>;
  readonly db: pg.Pool;
  readonly redis: RedisClient;
}

/** Call once at the top of a test file. */
export function isolatedContext(label: string): TestContext {
  const prefix = uniquePrefix(label);
  const context: TestContext = {
    prefix,
    env: baseEnv(prefix),
    db: testDb(),
    redis: testRedis(),
  };
  // Registered first, so it runs last: vitest runs after-hooks in reverse order ('stack').
  afterAll(async () => {
    await deletePrefix(context.redis, prefix);
    await context.redis.quit();
    await context.db.end();
  });
  return context;
}
