// readOnlySnapshot on the real Postgres: the snapshot is taken in the round trip that begins
// the transaction (after beforeSnapshot, before work), and a connection Postgres ends while
// the snapshot waits on something else fails the measurement, not the process.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { eventually } from '../../test/support/services.js';
import { isDependencyUnavailable } from '../errors.js';
import { createDbPool, readOnlySnapshot, withTransaction, type DbPool } from './pool.js';

const writer = createDbPool(TEST_DATABASE_URL, 1);
const orgId = `org_snapshot_${randomBytes(4).toString('hex')}`;
let entry = 0;

afterAll(async () => {
  await writer.query('DELETE FROM usage_dead_letters WHERE org_id = $1', [orgId]);
  await writer.end();
});

/** Commits a row the reads below count (a dead letter of the test's org), on another connection. */
async function commitRow(): Promise<void> {
  entry += 1;
  await writer.query(
    `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
     VALUES ($1, $2, $1, 'test', '[]')`,
    [orgId, `${entry}-0`],
  );
}

const rowsIn = async (db: Pick<DbPool, 'query'>): Promise<number> =>
  Number(
    (
      await db.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM usage_dead_letters WHERE org_id = $1',
        [orgId],
      )
    ).rows[0]!.n,
  );

/** Whether the connection is still inside readOnlySnapshot's transaction. */
const inSnapshot = async (db: Pick<DbPool, 'query'>): Promise<boolean> =>
  (await db.query<{ transaction_read_only: string }>('SHOW transaction_read_only')).rows[0]!
    .transaction_read_only === 'on';

describe('readOnlySnapshot', () => {
  it('takes the snapshot after beforeSnapshot and before work, in one read-only repeatable read', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1);
    try {
      const before = await rowsIn(writer);
      const seen = await readOnlySnapshot(
        db,
        async (client) => {
          // Committed once the snapshot's round trip is answered: not in the snapshot.
          await commitRow();
          const isolation = await client.query<{ transaction_isolation: string }>(
            'SHOW transaction_isolation',
          );
          expect(isolation.rows[0]!.transaction_isolation).toBe('repeatable read');
          expect(await inSnapshot(client)).toBe(true);
          const first = await rowsIn(client);
          await commitRow();
          return [first, await rowsIn(client)];
        },
        // Committed while the connection is held, before the snapshot: in it.
        commitRow,
      );
      expect(seen).toEqual([before + 1, before + 1]);
      expect(await rowsIn(writer)).toBe(before + 3);
    } finally {
      await db.end();
    }
  });

  it('fails, and drops the connection, when Postgres ends it while no statement runs', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1);
    try {
      // As when Postgres restarts while a measurement waits on Redis (the deletion count, the
      // cut): the server ends the connection between two statements.
      const ended = async (client: Pick<DbPool, 'query'>): Promise<void> => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await writer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        await new Promise((resolve) => setTimeout(resolve, 200));
      };
      await expect(
        readOnlySnapshot(db, async (client) => {
          await ended(client);
          return rowsIn(client);
        }),
      ).rejects.toThrow();
      // The broken client is not handed out again: the next snapshot gets a new connection.
      expect(await readOnlySnapshot(db, (client) => inSnapshot(client))).toBe(true);
      expect(db.totalCount).toBe(1);
    } finally {
      await db.end();
    }
  });
});

describe('a pool whose waits are bounded (DATABASE_TIMEOUT_MS)', () => {
  it('cancels a statement that runs past the bound: 57014, counted as a dependency away', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1, 200);
    try {
      const started = performance.now();
      const error = await db.query('SELECT pg_sleep(5)').catch((caught: unknown) => caught);
      expect(performance.now() - started).toBeLessThan(3000);
      expect(error).toMatchObject({ code: '57014' });
      expect(isDependencyUnavailable(error)).toBe(true);
      // The connection is fine afterwards (the server cancelled the statement, not the session).
      expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      await db.end();
    }
  });

  it('gives up waiting for a connection after the bound, counted as a dependency away', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1, 200);
    const held = await db.connect();
    try {
      const started = performance.now();
      const error = await db.connect().catch((caught: unknown) => caught);
      expect(performance.now() - started).toBeGreaterThanOrEqual(150);
      expect(error).toBeInstanceOf(Error);
      expect(isDependencyUnavailable(error)).toBe(true);
    } finally {
      held.release();
      await db.end();
    }
  });

  it('gives up on a server that never answers, and drops the transaction client it was on', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1, 200);
    const client = await db.connect();
    const { pid } = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))
      .rows[0]!;
    client.release();
    // The client's server process stops answering (a hung server, a network that drops
    // packets): no statement timeout can fire there.
    process.kill(pid, 'SIGSTOP');
    try {
      const started = performance.now();
      const error = await withTransaction(db, (transaction) => transaction.query('SELECT 1')).catch(
        (caught: unknown) => caught,
      );
      // One read time-out (2.2 s), not a second one for a ROLLBACK queued behind the first.
      expect(performance.now() - started).toBeLessThan(4000);
      expect(error).toMatchObject({ message: 'Query read timeout' });
      expect(isDependencyUnavailable(error)).toBe(true);
      // The client is not handed out again: the next statement gets a new connection.
      expect(db.totalCount).toBe(0);
      process.kill(pid, 'SIGCONT');
      expect(
        (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
      ).not.toBe(pid);
    } finally {
      // Continued, it finds its connection closed and exits (it may be gone already).
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
      await writer.query('SELECT pg_terminate_backend($1)', [pid]);
      await db.end();
    }
  });

  it('drops a snapshot client whose statement got no answer, so the next measurement gets a connection', async () => {
    // An account rebuild's measurement on a connection whose server process stopped answering:
    // the measurement fails after one read time-out, and the org's next one needs a connection
    // at once. A ROLLBACK queued behind the unanswered statement would hold this one for a
    // second read time-out (3 s here), past the pool's wait for a connection (1 s: room for a
    // loaded machine to connect, which 200 ms did not always leave).
    const db = createDbPool(TEST_DATABASE_URL, 1, 1000);
    let pid = 0;
    try {
      await db.query('SELECT 1'); // the snapshot's connection, made before the clock matters
      const error = await readOnlySnapshot(db, async (client) => {
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        process.kill(pid, 'SIGSTOP');
        return client.query('SELECT 1');
      }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ message: 'Query read timeout' });
      const next = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid').then(
        (result) => result.rows[0]!.pid,
        (caught: unknown) => caught,
      );
      expect(typeof next === 'number' && next !== pid ? 'a new connection' : next).toBe(
        'a new connection',
      );
    } finally {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
      if (pid) await writer.query('SELECT pg_terminate_backend($1)', [pid]);
      await db.end();
    }
  });

  /**
   * A pool of one bounded by 200 ms whose server process stops just as a COMMIT is sent (a
   * hung host, a network that holds the packets) and resumes 3 s later, past the client's read
   * time-out: the COMMIT then runs. Runs one transaction inserting entry `entryId`; says what
   * the caller was told and whether the row is there once the server has resumed and is done
   * with the transaction.
   */
  async function commitThroughStall(
    entryId: string,
    options?: { replayable: boolean },
  ): Promise<{ outcome: unknown; landed: number | null; waitedMs: number }> {
    const db = createDbPool(TEST_DATABASE_URL, 1, 200);
    let pid = 0;
    let resumed: Promise<void> = Promise.resolve();
    const stalling: Pick<DbPool, 'connect'> = {
      connect: async () => {
        const client = await db.connect();
        type Query = (text: unknown, ...rest: unknown[]) => Promise<unknown>;
        const query = client.query.bind(client) as Query;
        (client as unknown as { query: Query }).query = (text, ...rest) => {
          const commit = text === 'COMMIT' || (text as { text?: unknown })?.text === 'COMMIT';
          if (commit) {
            process.kill(pid, 'SIGSTOP');
            resumed = new Promise((resolve) =>
              setTimeout(() => {
                process.kill(pid, 'SIGCONT');
                resolve();
              }, 3000),
            );
          }
          return query(text, ...rest);
        };
        return client;
      },
    };
    try {
      const started = performance.now();
      const outcome = await withTransaction(
        stalling as DbPool,
        async (transaction) => {
          pid = (await transaction.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))
            .rows[0]!.pid;
          await transaction.query(
            `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
             VALUES ($1, $2, $1, 'test', '[]')`,
            [orgId, entryId],
          );
        },
        options,
      ).then(
        () => 'committed',
        (error: unknown) => (error as Error).message,
      );
      const waitedMs = performance.now() - started;
      // Resumed, the server process runs the COMMIT it was sent and answers it (idle), or
      // finds its client gone and ends (no row): either way it is done with the transaction.
      await resumed;
      await eventually(async () => {
        const { rows } = await writer.query<{ state: string }>(
          'SELECT state FROM pg_stat_activity WHERE pid = $1',
          [pid],
        );
        return rows[0] === undefined || rows[0].state === 'idle' ? true : undefined;
      });
      const landed = await writer.query(
        `SELECT 1 FROM usage_dead_letters WHERE org_id = $1 AND entry_id = $2`,
        [orgId, entryId],
      );
      return { outcome, landed: landed.rowCount, waitedMs };
    } finally {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
      await db.end();
    }
  }

  it('never reports a transaction failed that commits: its COMMIT is waited for past the bound', async () => {
    const { outcome, landed } = await commitThroughStall('commit-0');
    // The caller is told what happened: committed when the row is there, failed when not.
    expect({ outcome, landed }).toEqual({ outcome: 'committed', landed: 1 });
  });

  it('gives up on the COMMIT of a replayable transaction like any statement (it is run again)', async () => {
    const { outcome, waitedMs } = await commitThroughStall('commit-1', { replayable: true });
    // Told it failed within the bound and its read grace; the caller writes the batch again,
    // and a replay of rows already there changes nothing (ON CONFLICT DO NOTHING).
    expect(outcome).toBe('Query read timeout');
    expect(waitedMs).toBeLessThan(2_900);
  });

  it('ends, on the server, a transaction whose client has said nothing for a minute (every pool)', async () => {
    for (const db of [
      createDbPool(TEST_DATABASE_URL, 1),
      createDbPool(TEST_DATABASE_URL, 1, 200),
    ]) {
      try {
        expect((await db.query('SHOW idle_in_transaction_session_timeout')).rows[0]).toEqual({
          idle_in_transaction_session_timeout: '1min',
        });
      } finally {
        await db.end();
      }
    }
  });

  it('leaves a pool without a bound unbounded (migrations, the CLI)', async () => {
    const db = createDbPool(TEST_DATABASE_URL, 1);
    try {
      expect(
        (await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0],
      ).toEqual({ statement_timeout: '0' });
    } finally {
      await db.end();
    }
  });
});
