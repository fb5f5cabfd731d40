// One isolated context per test file: its own Redis key prefix (and so its own accounts,
// streams and caches), the environment for the gateway processes and CLI calls it starts,
// and handles on the real Postgres and Redis. The keys under the prefix are deleted and the
// handles closed after the file, once its own afterAll hooks (stopping gateways) have run.
//
// `ownDatabase`: the file's gateways and CLI calls use a database of its own (a copy of the
// suite's migrated template, made before the file, dropped after), not the suite's shared one.
// For gateways that send e-mail: each sends every message queued in its database (the outbox,
// decision 375) through its own SMTP_URL, so on a shared database one file's gateway would send
// another file's messages to its own test server.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../src/redis/connect.js';
import { ensureDatabase, migrate } from '../../src/db/migrate.js';
import { createDbPool } from '../../src/db/pool.js';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { baseEnv, TEMPLATE_DATABASE_URL, TEST_DATABASE_URL, uniquePrefix } from './env.js';
import { deletePrefix, eventually, testDb, testRedis } from './services.js';

export interface TestContext {
  readonly prefix: string;
  readonly env: Record<string, string>;
  readonly db: pg.Pool;
  readonly redis: RedisClient;
}

/** Call once at the top of a test file. */
export function isolatedContext(
  label: string,
  options: { readonly ownDatabase?: boolean } = {},
): TestContext {
  const prefix = uniquePrefix(label);
  const databaseUrl = options.ownDatabase
    ? `${TEST_DATABASE_URL}_${randomBytes(6).toString('hex')}`
    : TEST_DATABASE_URL;
  const context: TestContext = {
    prefix,
    env: { ...baseEnv(prefix), DATABASE_URL: databaseUrl },
    db: testDb(databaseUrl),
    redis: testRedis(),
  };
  if (options.ownDatabase) {
    // Registered first, so it runs before the file's own: its gateways find the tables.
    beforeAll(async () => {
      if (await copiedFromTemplate(databaseUrl)) return;
      await ensureDatabase(databaseUrl);
      const migrating = createDbPool(databaseUrl, 1);
      try {
        await migrate(migrating);
      } finally {
        await migrating.end();
      }
    });
  }
  // Registered first, so it runs last: vitest runs after-hooks in reverse order ('stack').
  afterAll(async () => {
    await deletePrefix(context.redis, prefix);
    await context.redis.quit();
    await context.db.end();
    if (options.ownDatabase) {
      const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
      try {
        const name = new URL(databaseUrl).pathname.slice(1);
        // The file's connections close as their pools end: a session FORCE ended meanwhile
        // would be an error in a client with nobody listening. Waited for, a while.
        await eventually(async () => {
          const { rows } = await admin.query<{ sessions: number }>(
            'SELECT count(*)::int AS sessions FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          return rows[0]!.sessions === 0 ? true : undefined;
        }, 10_000).catch(() => undefined);
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
  });
  return context;
}

/**
 * Makes `databaseUrl`'s database a copy of the suite's migrated template (global-setup.ts):
 * half the time of migrating a new one, for each of the files with a database of their own.
 * False when the template cannot be copied now (a connection to it open, another run's setup
 * migrating it): the file then migrates its own as before.
 */
async function copiedFromTemplate(databaseUrl: string): Promise<boolean> {
  const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
  try {
    const name = new URL(databaseUrl).pathname.slice(1);
    const template = new URL(TEMPLATE_DATABASE_URL).pathname.slice(1);
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    return true;
  } catch {
    return false;
  } finally {
    await admin.end();
  }
}
