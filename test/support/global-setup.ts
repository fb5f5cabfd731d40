// Once per test run: the compiled gateway must exist (npm test builds it) and the test
// database is created and migrated before files start spawning gateways; so is the template
// the files with a database of their own copy (test/support/context.ts), left with no
// connection open (a database is copied only then).
import { existsSync } from 'node:fs';
import { ensureDatabase, migrate } from '../../src/db/migrate.js';
import { createDbPool } from '../../src/db/pool.js';
import { TEMPLATE_DATABASE_URL, TEST_DATABASE_URL } from './env.js';

export default async function setup(): Promise<void> {
  if (!existsSync(new URL('../../dist/src/main.js', import.meta.url))) {
    throw new Error('dist/ is missing: run the tests with `npm test` (it builds first)');
  }
  for (const url of [TEST_DATABASE_URL, TEMPLATE_DATABASE_URL]) {
    await ensureDatabase(url);
    const db = createDbPool(url, 1);
    try {
      await migrate(db);
    } finally {
      await db.end();
    }
  }
}
