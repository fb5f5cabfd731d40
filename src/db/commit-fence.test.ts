// The commit fence on the real Postgres: a transaction committed by work run under a fence is
// checked in the transaction, before its COMMIT — a fence that rejects rolls it back, together
// with whatever the fence itself wrote — and one committed once that work is over, or outside
// it, is not checked.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { fencedWorkRunning, runFenced, type CommitFence } from './commit-fence.js';
import { createDbPool, withTransaction, type DbPool } from './pool.js';

const db = createDbPool(TEST_DATABASE_URL, 2);
const orgId = `org_fence_${randomBytes(4).toString('hex')}`;
let entry = 0;

/** One connection: a transaction waits for it while another holds it. */
const single = createDbPool(TEST_DATABASE_URL, 1);

afterAll(async () => {
  await db.query('DELETE FROM usage_dead_letters WHERE org_id = $1', [orgId]);
  await db.end();
  await single.end();
});

/** Commits one row (a dead letter of the test's org) in a transaction; its reason is `reason`. */
async function commitRow(reason: string, pool: DbPool = db): Promise<void> {
  entry += 1;
  const entryId = `${entry}-0`;
  await withTransaction(pool, (client) =>
    client.query(
      `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
       VALUES ($1, $2, $1, $3, '[]')`,
      [orgId, entryId, reason],
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
      return true;
    };
    await runFenced(marking, () => commitRow('passed'));
    expect(await reasons()).toEqual(expect.arrayContaining(['passed', 'fence']));
  });

  it('rolls back a transaction the fence answers false, unchecked, and returns what its work returned', async () => {
    const seen: unknown[] = [];
    const refusal = { refused: 'the app is deleted' };
    const refusingRollsBack: CommitFence = async (client, result) => {
      seen.push(result);
      if (result === refusal) return false;
      await client.query(
        `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
         VALUES ($1, 'fence-1', $1, 'marked', '[]')`,
        [orgId],
      );
      return true;
    };
    const answered = await runFenced(refusingRollsBack, () =>
      withTransaction(db, async (client) => {
        await client.query(
          `INSERT INTO usage_dead_letters (stream, entry_id, org_id, reason, entry)
           VALUES ($1, 'refused-0', $1, 'written, then refused', '[]')`,
          [orgId],
        );
        return refusal;
      }),
    );
    expect(answered).toBe(refusal);
    expect(seen).toEqual([refusal]);
    const kept = await reasons();
    expect(kept).not.toContain('written, then refused');
    expect(kept).not.toContain('marked');
    // The connection went back to the pool out of its transaction: the next one commits.
    await commitRow('after the refusal');
    expect(await reasons()).toContain('after the refusal');
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
        return true;
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

/** A fence that records whose it is, each time it is run. */
function recorder(): { fencedBy: string[]; fence: (name: string) => CommitFence } {
  const fencedBy: string[] = [];
  return {
    fencedBy,
    fence: (name) => async () => {
      fencedBy.push(name);
      return true;
    },
  };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('the fence of a fenced work never reaches a transaction that is not its own', () => {
  it("a transaction waiting for a connection, handed one by the fenced work's release, is not checked", async () => {
    const { fencedBy, fence } = recorder();
    const holding = gate();
    const held = gate();
    const fenced = runFenced(fence('fenced'), async () => {
      await withTransaction(single, async () => {
        held.open();
        await holding.opened;
      });
      // Still running when the waiting transaction commits on the connection it gave back.
      await commitRow('fenced, after', single);
    });
    await held.opened;
    // Outside the fenced work: it waits in the pool's queue, whose callback runs when the
    // fenced work releases its client.
    const waiting = commitRow('waited for the connection', single);
    await expect.poll(() => single.waitingCount).toBe(1);
    holding.open();
    await Promise.all([fenced, waiting]);
    expect(fencedBy).toEqual(['fenced', 'fenced']);
    expect(await reasons()).toEqual(
      expect.arrayContaining(['waited for the connection', 'fenced, after']),
    );
  });

  it('a connection the fenced work opened, reused by other work while it runs, does not carry its fence', async () => {
    const { fencedBy, fence } = recorder();
    const pool = createDbPool(TEST_DATABASE_URL, 1);
    try {
      const reused = gate();
      const fenced = runFenced(fence('fenced'), async () => {
        // The pool's first connection, opened (its socket made) inside the fenced work.
        await commitRow('opened the connection', pool);
        await reused.opened;
      });
      await expect.poll(() => pool.totalCount).toBe(1);
      await commitRow('on the same connection', pool);
      reused.open();
      await fenced;
      expect(fencedBy).toEqual(['fenced']);
    } finally {
      await pool.end();
    }
  });

  it("work a fenced work left behind, committing while another one runs, is checked by neither's fence", async () => {
    const { fencedBy, fence } = recorder();
    const later = gate();
    let leftBehind: Promise<void> | undefined;
    await runFenced(fence('first'), async () => {
      leftBehind = later.opened.then(() => commitRow('left behind'));
    });
    expect(fencedWorkRunning()).toBe(0);
    const second = gate();
    const running = runFenced(fence('second'), () => second.opened);
    later.open();
    await leftBehind;
    second.open();
    await running;
    expect(fencedBy).toEqual([]);
  });
});

describe('the count of fenced works (the promise hooks are on only while it is above 0)', () => {
  it('comes back to 0 after a work that throws at once or rejects, and the next transaction is not checked', async () => {
    const { fencedBy, fence } = recorder();
    const throwsAtOnce = (() => {
      throw new Error('at once');
    }) as unknown as () => Promise<void>;
    await expect(runFenced(fence('thrown'), throwsAtOnce)).rejects.toThrow('at once');
    await expect(
      runFenced(fence('rejected'), () => Promise.reject(new Error('later'))),
    ).rejects.toThrow('later');
    expect(fencedWorkRunning()).toBe(0);
    await commitRow('after the failures');
    expect(fencedBy).toEqual([]);
  });

  it('nested works: each transaction is checked by the innermost fence around it, and the count ends at 0', async () => {
    const { fencedBy, fence } = recorder();
    await runFenced(fence('outer'), async () => {
      await commitRow('outer, before');
      await runFenced(fence('inner'), async () => {
        expect(fencedWorkRunning()).toBe(2);
        await commitRow('inner');
      });
      expect(fencedWorkRunning()).toBe(1);
      await commitRow('outer, after');
    });
    expect(fencedWorkRunning()).toBe(0);
    expect(fencedBy).toEqual(['outer', 'inner', 'outer']);
    await commitRow('after both');
    expect(fencedBy).toHaveLength(3);
  });
});
