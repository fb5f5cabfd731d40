// A database of a test's own, beside the suite's: migrated, changed by the test, dropped after.
import { ensureDatabase, migrate } from '../../src/db/migrate.js';
import { createDbPool, type DbPool } from '../../src/db/pool.js';
import { TEST_DATABASE_URL } from './env.js';

/**
 * A database of its own (the suite's name + `_name`), migrated, then `rewind` run in it; `body`
 * gets it, and it is dropped after.
 */
export async function withDatabase(
  name: string,
  rewind: string,
  body: (db: DbPool) => Promise<void>,
): Promise<void> {
  const url = `${TEST_DATABASE_URL}_${name}`;
  await ensureDatabase(url);
  const db = createDbPool(url, 2);
  try {
    await migrate(db);
    await db.query(rewind);
    await body(db);
  } finally {
    await db.end();
    const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
    await admin.query(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}" WITH (FORCE)`);
    await admin.end();
  }
}
