// Postgres pool. numeric comes back as text (never a float); bigint (int8) as text too.
import pg from 'pg';

export type DbPool = pg.Pool;
export type DbClient = pg.PoolClient;

export function createDbPool(databaseUrl: string, max = 10): DbPool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30_000 });
  // An idle client's error (e.g. the server restarted) must not crash the process.
  pool.on('error', () => undefined);
  // Nor a checked-out one's, lost between two statements (a snapshot waiting on Redis): its
  // next statement fails instead, and the pool drops it when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Runs `work` in one transaction on one client: committed if it resolves, rolled back if not. */
export async function withTransaction<T>(
  db: DbPool,
  work: (client: DbClient) => Promise<T>,
): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Begins a REPEATABLE READ, read-only transaction and takes its snapshot (one round trip). */
export const SNAPSHOT_STATEMENT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1';

/**
 * Runs `work` in one REPEATABLE READ, read-only snapshot, taken before `work` starts (at the
 * transaction's first statement, sent with its BEGIN): every query `work` makes on the client
 * sees the database as of that moment. The transaction is ended in the background once `work`
 * is done: nothing depends on it, and under load each round trip costs a turn of a busy loop.
 */
export async function readOnlySnapshot<T>(
  db: DbPool,
  work: (client: DbClient) => Promise<T>,
  /** Runs once a connection is held, just before the snapshot is taken (no pool wait after). */
  beforeSnapshot?: () => Promise<void>,
): Promise<T> {
  const client = await db.connect();
  try {
    await beforeSnapshot?.();
    await client.query(SNAPSHOT_STATEMENT);
    return await work(client);
  } finally {
    // A client whose ROLLBACK fails is discarded, not handed out again.
    client.query('ROLLBACK').then(
      () => client.release(),
      (error: Error) => client.release(error),
    );
  }
}
