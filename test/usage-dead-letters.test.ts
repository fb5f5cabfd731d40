// One poison entry must not block the usage writer: a row Postgres refuses (and an entry that
// is not a record) goes to usage_dead_letters with its reason and the entry, a metric counts
// it, every other row lands, and every entry is acked and removed from the stream. Account
// rebuilds still count what the dead letters charged.
import { afterAll, describe, expect, it } from 'vitest';
import { createDbPool } from '../src/db/pool.js';
import { usageRecordToFields } from '../src/ledger/usage-record.js';
import { UnwrittenUsage } from '../src/ledger/unwritten-usage.js';
import { GatewayMetrics } from '../src/metrics.js';
import { createRedisKeys, USAGE_CONSUMER_GROUP } from '../src/redis/keys.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('deadletter');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const metrics = new GatewayMetrics(false);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await db.end();
});

describe('usage writer with a poison entry', () => {
  it('dead-letters the refused row and the unreadable entry, writes every other row, keeps going', async () => {
    const orgId = `org_dl_${Date.now()}`;
    const stream = keys.usageStream(orgId);
    await redis.sadd(keys.usageStreamRegistry(), stream);
    const good = [0, 1, 2, 3, 4].map(() => usageRecord(orgId, 7n));
    // 'EURO' does not fit usage_records.currency char(3): Postgres refuses this row forever.
    const poison = usageRecord(orgId, 9n, { currency: 'EURO' });
    const appended = async (fields: string[]): Promise<string> =>
      (await redis.xadd(stream, '*', ...fields))!;
    await appended(usageRecordToFields(good[0]!));
    await appended(usageRecordToFields(good[1]!));
    const poisonId = await appended(usageRecordToFields(poison));
    await appended(usageRecordToFields(good[2]!));
    const junkId = await appended(['record', '{not json']);
    await appended(usageRecordToFields(good[3]!));
    // Not a uuid: refused by usage_records.request_id.
    const badId = usageRecord(orgId, 11n, { requestId: 'not-a-uuid' });
    const badIdEntry = await appended(usageRecordToFields(badId));

    const writer = testUsageWriter(writerRedis, keys, db, 'dl-writer', { metrics });
    writer.start();
    try {
      const rows = await eventually(async () => {
        const found = await db.query<{ request_id: string }>(
          'SELECT request_id FROM usage_records WHERE org_id = $1',
          [orgId],
        );
        return found.rows.length === 4 ? found.rows : undefined;
      });
      expect(new Set(rows.map((row) => row.request_id))).toEqual(
        new Set(good.slice(0, 4).map((record) => record.requestId)),
      );

      // The writer keeps going: an entry settled after the poison lands too.
      await appended(usageRecordToFields(good[4]!));
      await eventually(async () => {
        const found = await db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [
          good[4]!.requestId,
        ]);
        return found.rows[0];
      });
    } finally {
      await writer.stop();
    }

    const { rows: letters } = await db.query<{
      stream: string;
      entry_id: string;
      request_id: string | null;
      org_id: string | null;
      reason: string;
      entry: string;
      failed_at: Date;
    }>(
      'SELECT stream, entry_id, request_id, org_id, reason, entry, failed_at FROM usage_dead_letters WHERE stream = $1 ORDER BY entry_id',
      [stream],
    );
    expect(letters.map((letter) => letter.entry_id)).toEqual([poisonId, junkId, badIdEntry]);
    const [refused, unreadable] = letters;
    expect(refused!.request_id).toBe(poison.requestId);
    expect(refused!.org_id).toBe(orgId);
    expect(refused!.reason).toMatch(/character\(3\)|too long/);
    expect(JSON.parse(refused!.entry)).toEqual(usageRecordToFields(poison));
    expect(refused!.failed_at).toBeInstanceOf(Date);
    expect(unreadable!.request_id).toBeNull();
    expect(unreadable!.reason).toMatch(/unreadable record/);
    expect(JSON.parse(unreadable!.entry)).toEqual(['record', '{not json']);

    // Nothing left in the stream, nothing pending: every entry is in one table or the other.
    expect(await redis.xlen(stream)).toBe(0);
    const pending = (await redis.xpending(stream, USAGE_CONSUMER_GROUP)) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
    expect(await metrics.registry.getSingleMetricAsString('gw_usage_dead_letters_total')).toMatch(
      /^gw_usage_dead_letters_total 3$/m,
    );
    // Settled and charged in Redis, missing from usage_records: an account rebuilt from the
    // ledger still counts them (until an operator replays them).
    // (In no particular order: the dead letters are read without one, and summed.)
    const unwritten = await new UnwrittenUsage(redis, db, keys).forOrg(orgId);
    expect(
      unwritten
        .map((record) => [record.requestId, record.sellCostNano] as const)
        .sort(([, a], [, b]) => Number(a - b)),
    ).toEqual([
      [poison.requestId, 9n],
      [badId.requestId, 11n],
    ]);
  });
});
