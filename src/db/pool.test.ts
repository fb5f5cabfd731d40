// readOnlySnapshot on the real Postgres: the snapshot is taken in the round trip that begins
// the transaction (after beforeSnapshot, before work), and a connection Postgres ends while
// the snapshot waits on something else fails the measurement, not the process.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { createDbPool, readOnlySnapshot, type DbPool } from './pool.js';

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
