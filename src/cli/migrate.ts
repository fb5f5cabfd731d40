// gw migrate: applies the migrations the database lacks, under the same advisory lock as a
// gateway's boot, and prints their names. Needs Postgres only. Run it before rolling out an
// image whose migrations take long on a large ledger (a Kubernetes init container or job):
// a gateway that migrates at boot would otherwise outlast its startup probe.
import { loadConfig } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { createDbPool } from '../db/pool.js';
import { reachable } from './context.js';
import { cliIo } from './io.js';
import { printJson, UsageError } from './output.js';

export const migrateHelp = `gw migrate
  Applies the database migrations not applied yet (what a gateway does at boot) and prints
  {"applied": [names]}. Needs DATABASE_URL only.`;

export async function migrateCommand(argv: string[]): Promise<void> {
  if (argv.length > 0) throw new UsageError(`gw migrate takes no arguments (got ${argv[0]})`);
  const config = loadConfig(cliIo().env);
  // As every command: a connection waits at most DATABASE_TIMEOUT_MS (gw_unavailable, exit 2;
  // in a Kubernetes init container the kubelet starts it again), the migrations as long as
  // they take (decision 426).
  const connectMs = config.DATABASE_TIMEOUT_MS;
  const driverConnectMs = connectMs + 1_000;
  await reachable(
    ensureDatabase(config.DATABASE_URL, driverConnectMs),
    connectMs,
    'Postgres (DATABASE_URL)',
  );
  const db = createDbPool(config.DATABASE_URL, 1, undefined, {
    applicationName: 'gw-migrate',
    connectTimeoutMs: driverConnectMs,
  });
  try {
    printJson({ applied: await migrate(db) });
  } finally {
    await db.end();
  }
}
