// Start-up, Postgres: the database made if missing and migrated, then the gateway's own pool.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { createDbPool, type DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { waitForDependency } from './dependency-wait.js';

/** The driver's own bound on a connection, a little after ours (ours answers first, clearly). */
const DRIVER_CONNECT_GRACE_MS = 1_000;

/**
 * How long a stop waits for a pool to end: its goodbye is written at once, and only the
 * server's answer is waited for (a vanished Postgres never gives it; the process exits anyway).
 */
export const POOL_END_WAIT_MS = 2_000;

/** The request pool, once the schema is current; closed by `closers`. */
export async function openPostgres(
  config: Config,
  logger: Logger,
  closers: Closers,
  stop?: AbortSignal,
): Promise<DbPool> {
  // Postgres down or hanging at boot: tried again with backoff, each attempt bounded by
  // DATABASE_TIMEOUT_MS, for six of them in all; then the boot fails (decision 426).
  await waitForDependency(
    logger,
    { service: 'Postgres (DATABASE_URL)', attemptMs: config.DATABASE_TIMEOUT_MS, stop },
    (attemptMs) => ensureDatabase(config.DATABASE_URL, attemptMs + DRIVER_CONNECT_GRACE_MS),
  );
  // Migrations run unbounded on a pool of their own (one can take minutes on a large
  // ledger), once connected; every wait of the gateway's own pool is bounded by
  // DATABASE_TIMEOUT_MS.
  const migrations = createDbPool(config.DATABASE_URL, 1, undefined, {
    applicationName: 'gw-migrate',
    connectTimeoutMs: config.DATABASE_TIMEOUT_MS + DRIVER_CONNECT_GRACE_MS,
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
