// gw migrate: applies the migrations the database lacks, under the same advisory lock as a
// gateway's boot, and prints their names. Needs Postgres only. Run it before rolling out an
// image whose migrations take long on a large ledger (a Kubernetes init container or job):
// a gateway that migrates at boot would otherwise outlast its startup probe.
import { loadConfig } from '../config.js';
import { migrate } from '../db/migrate.js';
import { openCliDatabase } from './context.js';
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
  const db = await openCliDatabase(config, 1, 'gw-migrate');
  try {
    printJson({ applied: await migrate(db) });
  } finally {
    await db.end();
  }
}
