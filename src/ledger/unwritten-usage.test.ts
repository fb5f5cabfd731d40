// The unwritten records a measurement counts, on the real Redis and Postgres: the dead letters
// are read through the ledger snapshot beside the cut, so a record is counted once whether it
// is in the stream, dead-lettered, or both, and a dead letter committed after the snapshot is
// judged with the snapshot's ledger (the cut's deletion count covers the record it moved).
// A rebuild's cut and gw reconcile's unwrittenAtSnapshot count the same records.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, uniquePrefix } from '../../test/support/env.js';
import { usageRecord } from '../../test/support/records.js';
import { deletePrefix, testRedis } from '../../test/support/services.js';
import { createDbPool, readOnlySnapshot } from '../db/pool.js';
import { createRedisKeys } from '../redis/keys.js';
import { PostgresUsageSink } from './postgres-usage-sink.js';
import { UsageDeadLetters } from './usage-dead-letters.js';
import { usageRecordToFields, type UsageRecord } from './usage-record.js';
import { UnwrittenUsage, unwrittenAtSnapshot } from './unwritten-usage.js';

const prefix = uniquePrefix('unwritten');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 2);
const keys = createRedisKeys(prefix);
const orgId = `org_unwritten_${randomBytes(4).toString('hex')}`;
const otherOrg = `${orgId}_other`;
let entry = 0;

afterAll(async () => {
  await db.query('DELETE FROM usage_dead_letters WHERE org_id = ANY($1)', [[orgId, otherOrg]]);
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

const rec = (cost: bigint, org = orgId): UsageRecord => usageRecord(org, cost);

const inStream = async (record: UsageRecord): Promise<void> => {
  await redis.xadd(keys.usageStream(orgId), '*', ...usageRecordToFields(record));
};

async function deadLetter(record: UsageRecord, replayed = false): Promise<void> {
  entry += 1;
  await new UsageDeadLetters(db).write([
    {
      stream: keys.usageStream(record.orgId),
      entryId: `${entry}-0`,
      fields: usageRecordToFields(record),
      reason: 'test',
      requestId: record.requestId,
      orgId: record.orgId,
    },
  ]);
  if (replayed) {
    await db.query(
      'UPDATE usage_dead_letters SET replayed_at = now() WHERE stream = $1 AND entry_id = $2',
      [keys.usageStream(record.orgId), `${entry}-0`],
    );
  }
}

describe('the unwritten records of a measurement', () => {
  it('counts each record once, stream and dead letters alike, as of the snapshot', async () => {
    const both = rec(1n); // in the stream and dead-lettered
    const deadOnly = rec(2n);
    const replayed = rec(4n); // dead-lettered, replayed into the ledger
    const written = rec(8n); // in the stream, already in the ledger
    const lateInStream = rec(16n); // dead-lettered after the snapshot, still in the stream
    const lateGone = rec(32n); // dead-lettered after the snapshot, gone from the stream
    const streamOnly = rec(64n);
    await inStream(both);
    await deadLetter(both);
    await deadLetter(deadOnly);
    await deadLetter(replayed, true);
    await deadLetter(rec(128n, otherOrg));
    await new PostgresUsageSink(db).write([replayed, written]);
    await inStream(written);
    await inStream(lateInStream);
    await inStream(streamOnly);

    const unwritten = new UnwrittenUsage(redis, db, keys);
    const [fromCut, forReconcile] = await readOnlySnapshot(db, async (snapshot) => {
      await deadLetter(lateInStream);
      await deadLetter(lateGone);
      const cut = await unwritten.cut(orgId, snapshot);
      const entries = cut.entries.slice(0, 4); // the stream's, as gw reconcile reads them
      return [
        await unwritten.unwrittenAt(snapshot, cut),
        await unwrittenAtSnapshot(snapshot, orgId, entries),
      ];
    });
    const costs = (records: readonly UsageRecord[]): bigint[] =>
      records.map((record) => record.sellCostNano).sort((a, b) => Number(a - b));
    expect(costs(fromCut)).toEqual([1n, 2n, 16n, 64n]);
    expect(costs(forReconcile)).toEqual([1n, 2n, 16n, 64n]);
    // Read outside a snapshot, both late dead letters are there.
    expect(costs(await unwritten.forOrg(orgId))).toEqual([1n, 2n, 16n, 32n, 64n]);
  });
});
