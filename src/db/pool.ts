// Postgres pool. numeric comes back as text (never a float); bigint (int8) as text too.
import pg from 'pg';
import { checkCommitFence } from './commit-fence.js';

export type DbPool = pg.Pool;
export type DbClient = pg.PoolClient;

/** How much longer than the server's own bound the client waits for an answer. */
const QUERY_TIMEOUT_GRACE_MS = 2000;
/**
 * A transaction whose client has said nothing for this long is ended by the server, releasing
 * its locks. A client cut off without a reset (a partition, a primary replaced under its
 * address) never closes its session: its row locks would otherwise hold every other
 * instance's writes of those rows until the server's TCP keepalive notices, hours later.
 */
export const IDLE_IN_TRANSACTION_MS = 60_000;
/**
 * Every connection asks TCP to probe a peer that has sent nothing for this long (libuv then
 * probes each second, ten times): a server gone without a reset (a host powered off, a
 * partition) is noticed about 20 s after it went silent, instead of never on a connection
 * idle in the pool or waiting on a statement the server runs unbounded (a migration, the
 * CLI's scans, a COMMIT waited for). A server that is slow but there answers the probes.
 */
export const TCP_KEEPALIVE_IDLE_MS = 10_000;

/** What every connection of gw to Postgres sets, pooled or not (src/db/migrate.ts too). */
export const CONNECTION_OPTIONS = {
  keepAlive: true,
  keepAliveInitialDelayMillis: TCP_KEEPALIVE_IDLE_MS,
} as const;

/**
 * `timeoutMs` bounds every wait on Postgres (the gateway's DATABASE_TIMEOUT_MS): a statement
 * runs at most that long (the server cancels it: 57014), a connection is waited for at most
 * that long (pg-pool: "timeout exceeded when trying to connect"), and an answer that never
 * comes (a server or network that hangs: nothing left to cancel the statement) is given up
 * QUERY_TIMEOUT_GRACE_MS later ("Query read timeout"; the client is dropped, never reused).
 * All answer 503 `gw_unavailable` (isDependencyUnavailable). Unbounded when omitted:
 * migrations, the CLI. Every pool's sessions end a transaction idle for IDLE_IN_TRANSACTION_MS,
 * or `idleInTransactionMs` for a pool whose transactions wait on something else by design (the
 * webhook dispatcher's hold an endpoint through an HTTP attempt). Its sessions carry
 * `applicationName` (`pg_stat_activity.application_name`: which pool of gw holds what).
 */
export function createDbPool(
  databaseUrl: string,
  max = 10,
  timeoutMs?: number,
  options: {
    readonly idleInTransactionMs?: number;
    readonly applicationName?: string;
    /** A wait for a new connection, where `timeoutMs` bounds nothing else (the CLI's). */
    readonly connectTimeoutMs?: number;
  } = {},
): DbPool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    ...CONNECTION_OPTIONS,
    max,
    application_name: options.applicationName ?? 'gw',
    idleTimeoutMillis: 30_000,
    idle_in_transaction_session_timeout: options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS,
    ...(options.connectTimeoutMs !== undefined && {
      connectionTimeoutMillis: options.connectTimeoutMs,
    }),
    ...(timeoutMs !== undefined && {
      statement_timeout: timeoutMs,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs + QUERY_TIMEOUT_GRACE_MS,
    }),
  });
  // An idle client's error (e.g. the server restarted) must not crash the process.
  pool.on('error', () => undefined);
  // Nor a checked-out one's, lost between two statements (a snapshot waiting on Redis): its
  // next statement fails instead, and the pool drops it when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/**
 * A COMMIT is waited for past the pool's read time-out: given up on, it still runs once the
 * server reads it (a stopped host resumed, a network that held the packets), and the caller,
 * told the transaction failed, would undo or repeat work Postgres kept (a top-up in the ledger
 * and not in the live wallet). A server that runs bounds it with its statement_timeout.
 * (pg falls back to the pool's query_timeout for 0; this is setTimeout's largest delay.)
 */
const COMMIT = { text: 'COMMIT', query_timeout: 2 ** 31 - 1 };

/**
 * Runs `work` in one transaction on one client: committed if it resolves, rolled back if not.
 * `replayable`: every statement of `work` changes nothing when run again (a usage batch: ON
 * CONFLICT DO NOTHING), so a COMMIT of unknown outcome may be given up on like any statement
 * and the transaction simply run again: its wait is the pool's read time-out, not unbounded.
 * Work run under a commit fence (src/db/commit-fence.ts) has it checked before the COMMIT, which
 * may roll the transaction back instead (a refusal) and still return what `work` returned.
 */
export async function withTransaction<T>(
  db: DbPool,
  work: (client: DbClient) => Promise<T>,
  options: { readonly replayable?: boolean } = {},
): Promise<T> {
  const client = await db.connect();
  let result: T;
  let commits: boolean;
  try {
    await client.query('BEGIN');
    result = await work(client);
    commits = await checkCommitFence(client, result);
    if (commits) await client.query(options.replayable ? 'COMMIT' : COMMIT);
  } catch (error) {
    await rollBackAndRelease(client, error);
    throw error;
  }
  if (commits) client.release();
  else await rollBackAndRelease(client);
  return result;
}

/**
 * Ends `client`'s transaction (after `error`, if it failed) and gives the client back. One whose
 * statement got no answer is dropped at once: that ends the transaction on the server, where a
 * ROLLBACK would first wait behind the statement for a second read time-out. One whose
 * ROLLBACK fails (a lost connection) is dropped too, never handed out again. Never rejects.
 */
function rollBackAndRelease(client: DbClient, error?: unknown): Promise<void> {
  if ((error as { message?: unknown } | null)?.message === 'Query read timeout') {
    client.release(error as Error);
    return Promise.resolve();
  }
  return client.query('ROLLBACK').then(
    () => client.release(),
    (rollbackError: Error) => client.release(rollbackError),
  );
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
    const result = await work(client);
    void rollBackAndRelease(client);
    return result;
  } catch (error) {
    void rollBackAndRelease(client, error);
    throw error;
  }
}
