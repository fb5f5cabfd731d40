// Start-up, Postgres: the database made if missing and migrated, then the gateway's own pool.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { createDbPool, type DbPool } from '../db/pool.js';

/**
 * How long a stop waits for a pool to end: its goodbye is written at once, and only the
 * server's answer is waited for (a vanished Postgres never gives it; the process exits anyway).
 */
export const POOL_END_WAIT_MS = 2_000;

/** The request pool, once the schema is current; closed by `closers`. */
export async function openPostgres(config: Config, closers: Closers): Promise<DbPool> {
  await ensureDatabase(config.DATABASE_URL);
  // Migrations run unbounded on a pool of their own (one can take minutes on a large
  // ledger); every wait of the gateway's own pool is bounded by DATABASE_TIMEOUT_MS.
  const migrations = createDbPool(config.DATABASE_URL, 1, undefined, {
    applicationName: 'gw-migrate',
  });
  await migrate(migrations).finally(() => migrations.end());
  return closers.add(
    'postgres pool',
    createDbPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE, config.DATABASE_TIMEOUT_MS, {
      applicationName: 'gw-requests',
    }),
    (pool) => pool.end(),
    POOL_END_WAIT_MS,
  );
}
