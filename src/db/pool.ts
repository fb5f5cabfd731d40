// Postgres pool. numeric comes back as text (never a float); bigint (int8) as text too.
import pg from 'pg';

export type DbPool = pg.Pool;
export type DbClient = pg.PoolClient;

export function createDbPool(databaseUrl: string, max = 10): DbPool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30_000 });
  // An idle client's error (e.g. the server restarted) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}
