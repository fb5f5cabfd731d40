// Once per test run: the compiled gateway must exist (npm test builds it) and the test
// database is created and migrated before files start spawning gateways.
import { existsSync } from 'node:fs';
import { ensureDatabase, migrate } from '../../src/db/migrate.js';
import { createDbPool } from '../../src/db/pool.js';
import { TEST_DATABASE_URL } from './env.js';

export default async function setup(): Promise<void> {
  if (!existsSync(new URL('../../dist/src/main.js', import.meta.url))) {
    throw new Error('dist/ is missing: run the tests with `npm test` (it builds first)');
  }
  await ensureDatabase(TEST_DATABASE_URL);
  const db = createDbPool(TEST_DATABASE_URL, 1);
  try {
    await migrate(db);
  } finally {
    await db.end();
  }
}
