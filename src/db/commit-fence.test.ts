// The commit fence on the real Postgres: a transaction committed by work run under a fence is
// checked in the transaction, before its COMMIT — a fence that rejects rolls it back, together
// with whatever the fence itself wrote — and one committed once that work is over, or outside
// it, is not checked.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { fencedWorkRunning, runFenced, type CommitFence } from './commit-fence.js';
import { createDbPool, withTransaction } from './pool.js';

const db = createDbPool(TEST_DATABASE_URL, 2);
const orgId = `org_fence_${randomBytes(4).toString('hex')}`;
let entry = 0;

afterAll(async () => {
  await db.query('DELETE FROM usage_dead_letters WHERE org_id = $1', [orgId]);
  await db.end();
});

/** Commits one row (a dead letter of the test's org) in a transaction; its reason is `reason`. */
async function commitRow(reason: string): Promise<void> {
  entry += 1;
  await withTransaction(db, (client) =>
    client.query(
      `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
       VALUES ($1, $2, $1, $3, '[]')`,
      [orgId, `${entry}-0`, reason],
    ),
  );
}

const reasons = async (): Promise<string[]> =>
  (
    await db.query<{ reason: string }>(
      'SELECT reason FROM usage_dead_letters WHERE org_id = $1 ORDER BY entry_id',
      [orgId],
    )
  ).rows.map((row) => row.reason);

describe('runFenced', () => {
  it('commits a transaction the fence lets through, with what the fence wrote in it', async () => {
    const marking: CommitFence = async (client) => {
      await client.query(
        `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
         VALUES ($1, 'fence-0', $1, 'fence', '[]')`,
        [orgId],
      );
    };
    await runFenced(marking, () => commitRow('passed'));
    expect(await reasons()).toEqual(expect.arrayContaining(['passed', 'fence']));
  });

  it('rolls back a transaction the fence refuses, and checks none once the work is over', async () => {
    const refused = new Error('no longer held');
    let resumeLater: () => void = () => undefined;
    const later = new Promise<void>((resolve) => (resumeLater = resolve));
    let background: Promise<void> | undefined;
    await expect(
      runFenced(
        () => Promise.reject(refused),
        async () => {
          // Left running past the work: committed after it, unchecked.
          background = later.then(() => commitRow('after the work'));
          await commitRow('refused');
        },
      ),
    ).rejects.toBe(refused);
    resumeLater();
    await background;
    await commitRow('outside');
    const kept = await reasons();
    expect(kept).not.toContain('refused');
    expect(kept).toEqual(expect.arrayContaining(['after the work', 'outside']));
  });

  it('keeps two fenced works apart while both run, and is off once the last ends', async () => {
    const fencedBy: string[] = [];
    const fence =
      (name: string): CommitFence =>
      async () => {
        fencedBy.push(name);
      };
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = runFenced(fence('first'), async () => {
      await held;
      await commitRow('first');
    });
    const second = runFenced(fence('second'), () => commitRow('second'));
    expect(fencedWorkRunning()).toBe(2);
    await second;
    // The first still runs: its fence is still its own after the second's ended.
    expect(fencedWorkRunning()).toBe(1);
    release();
    await first;
    expect(fencedBy).toEqual(['second', 'first']);
    expect(fencedWorkRunning()).toBe(0);
    await commitRow('unfenced');
    expect(fencedBy).toEqual(['second', 'first']);
    // And a new fenced work after the hooks were taken away is fenced again.
    await runFenced(fence('third'), () => commitRow('third'));
    expect(fencedBy).toEqual(['second', 'first', 'third']);
  });
});
