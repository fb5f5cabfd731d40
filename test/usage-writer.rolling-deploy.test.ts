// A rolling deploy: writers of the old version drain what gateways of the new one settled. A
// writer leaves a record naming a field it does not know in the stream, pending and
// unacknowledged (never written without the field, never dead-lettered), writes the rest, and
// says how many wait; a writer that knows the field writes it later, once, whole. One writer
// runs one drain at a time.
import { afterAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createDbPool } from '../src/db/pool.js';
import { KNOWN_ENTRY_NAMES } from '../src/ledger/entry-format.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { usageRecordsAwaitingNewerWriter } from '../src/ledger/usage-backlog.js';
import type { UsageNotice } from '../src/ledger/usage-notices.js';
import { usageRecordToFields, type UsageRecord } from '../src/ledger/usage-record.js';
import { AWAITING_NEWER_WRITER } from '../src/ledger/usage-stream-group.js';
import { GatewayMetrics } from '../src/metrics.js';
import { createRedisKeys, USAGE_CONSUMER_GROUP } from '../src/redis/keys.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('rolling');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const gauge = new GatewayMetrics(false, undefined, {
  usageRecordsAwaitingNewerWriter: () => usageRecordsAwaitingNewerWriter(redis, keys),
});
const awaitingLine = (): Promise<string> =>
  gauge.registry.getSingleMetricAsString('gw_usage_records_awaiting_newer_writer');

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await db.end();
});

/** Appends an entry to the org's stream (registered, as a gateway's settle does). */
async function append(orgId: string, fields: string[]): Promise<string> {
  const stream = keys.usageStream(orgId);
  await redis.sadd(keys.usageStreamRegistry(), stream);
  return (await redis.xadd(stream, '*', ...fields))!;
}

/** The record's entry with its packed JSON changed by `change`. */
function entryOf(record: UsageRecord, change: (packed: Record<string, string>) => void): string[] {
  const [name, packed] = usageRecordToFields(record);
  const values = JSON.parse(packed!) as Record<string, string>;
  change(values);
  return [name!, JSON.stringify(values), 'credits_cost_nano', '0', 'credit_consumption', ''];
}

async function ledger(orgId: string): Promise<
  Array<{
    request_id: string;
    sell_cost: string;
    web_search_requests: number;
    cache_read_tokens: number;
  }>
> {
  const { rows } = await db.query<{
    request_id: string;
    sell_cost: string;
    web_search_requests: number;
    cache_read_tokens: number;
  }>(
    `SELECT request_id::text, sell_cost::text, web_search_requests, cache_read_tokens
       FROM usage_records WHERE org_id = $1 ORDER BY request_id`,
    [orgId],
  );
  return rows;
}

async function deadLetters(orgId: string): Promise<number> {
  const { rows } = await db.query('SELECT 1 FROM usage_dead_letters WHERE stream = $1', [
    keys.usageStream(orgId),
  ]);
  return rows.length;
}

/** Each pending entry: its consumer and how often it was delivered. */
async function pending(
  orgId: string,
): Promise<Array<{ id: string; consumer: string; deliveries: number }>> {
  const reply = (await redis.xpending(
    keys.usageStream(orgId),
    USAGE_CONSUMER_GROUP,
    '-',
    '+',
    100,
  )) as Array<[string, string, number, number]>;
  return reply.map(([id, consumer, , deliveries]) => ({ id, consumer, deliveries }));
}

/** A logger whose lines a test reads. */
function readableLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('usage writer during a rolling deploy', () => {
  it('leaves an entry naming what it does not know pending, writes the others, and counts it', async () => {
    const orgId = `org_rd1_${Date.now()}`;
    const before = usageRecord(orgId, 3n);
    const newer = usageRecord(orgId, 5n);
    const after = usageRecord(orgId, 7n);
    await append(orgId, usageRecordToFields(before));
    // A gateway of a later version: a field this version does not know, inside the record.
    const newerId = await append(
      orgId,
      entryOf(newer, (packed) => (packed.web_fetch_requests = '2')),
    );
    // And a notice of a type this version does not know.
    const noticeId = await append(orgId, [
      'event',
      'provider_credential.revoked',
      'org_id',
      orgId,
      'credential_id',
      'cred_1',
      'request_id',
      newer.requestId,
      'upstream_status',
      '401',
      'cooldown_until_ms',
      '1000',
      'at_ms',
      '900',
    ]);
    await append(orgId, usageRecordToFields(after));
    expect(await awaitingLine()).toMatch(/^gw_usage_records_awaiting_newer_writer 0$/m);

    const metrics = new GatewayMetrics(false);
    const { logger, lines } = readableLogger();
    const writer = testUsageWriter(writerRedis, keys, db, 'rd1-writer', {
      metrics,
      logger,
      claimIdleMs: 200,
    });
    expect(await writer.drainOnce()).toBe(2);

    // The others are written; the newer record is not (not even without the field).
    expect((await ledger(orgId)).map((row) => row.request_id).sort()).toEqual(
      [before.requestId, after.requestId].sort(),
    );
    expect(await deadLetters(orgId)).toBe(0);
    // Still in the stream, pending and unacknowledged, under the consumer that waits.
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(2);
    expect(await pending(orgId)).toEqual([
      { id: newerId, consumer: AWAITING_NEWER_WRITER, deliveries: 1 },
      { id: noticeId, consumer: AWAITING_NEWER_WRITER, deliveries: 1 },
    ]);
    expect(await awaitingLine()).toMatch(/^gw_usage_records_awaiting_newer_writer 2$/m);
    expect(await metrics.registry.getSingleMetricAsString('gw_usage_rows_written_total')).toMatch(
      /^gw_usage_rows_written_total 2$/m,
    );
    expect(lines).toContainEqual(
      expect.objectContaining({
        count: 2,
        unknownNames: ['event=provider_credential.revoked', 'web_fetch_requests'],
        msg: expect.stringMatching(/wait for a newer writer/) as unknown,
      }),
    );

    // Its loop claims them again once idle, at most once per claimIdleMs: no spinning, and
    // still nothing written, dead-lettered or acknowledged.
    writer.start();
    await sleep(1_000);
    await writer.stop();
    const left = await pending(orgId);
    expect(left.map((entry) => [entry.id, entry.consumer])).toEqual([
      [newerId, AWAITING_NEWER_WRITER],
      [noticeId, AWAITING_NEWER_WRITER],
    ]);
    for (const entry of left) expect(entry.deliveries).toBeLessThanOrEqual(1 + 1_000 / 200 + 1);
    expect(await ledger(orgId)).toHaveLength(2);
    expect(await deadLetters(orgId)).toBe(0);
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(2);
    expect(await awaitingLine()).toMatch(/^gw_usage_records_awaiting_newer_writer 2$/m);
    // (No writer of a later version comes for them here: the next tests count from 0.)
    await redis.srem(keys.usageStreamRegistry(), keys.usageStream(orgId));
    await redis.del(keys.usageStream(orgId));
  });

  it('a writer that knows the field writes the record later, whole and once', async () => {
    const orgId = `org_rd2_${Date.now()}`;
    // The writer of the version before web searches were recorded (decision 327).
    const beforeSearches = new Set(KNOWN_ENTRY_NAMES);
    beforeSearches.delete('web_search_requests');
    const oldWriter = testUsageWriter(writerRedis, keys, db, 'rd2-old', {
      claimIdleMs: 200,
      knownEntryNames: beforeSearches,
    });
    const newWriter = testUsageWriter(writerRedis, keys, db, 'rd2-new', { claimIdleMs: 200 });

    // A record of a gateway of that older version (no field), and one of this version.
    const older = usageRecord(orgId, 11n);
    await append(
      orgId,
      entryOf(older, (packed) => delete packed.web_search_requests),
    );
    const searched = usageRecord(orgId, 13n, { webSearchRequests: 3, cacheReadTokens: 4 });
    await append(
      orgId,
      entryOf(searched, () => undefined),
    );

    // The old writer drains first: it writes the older record as always, leaves the other.
    expect(await oldWriter.drainOnce()).toBe(1);
    expect((await ledger(orgId)).map((row) => row.request_id)).toEqual([older.requestId]);
    expect(await awaitingLine()).toMatch(/^gw_usage_records_awaiting_newer_writer 1$/m);

    // Both run side by side, as during the rollout: the new one gets the record in the end.
    oldWriter.start();
    newWriter.start();
    try {
      await eventually(async () => ((await ledger(orgId)).length === 2 ? true : undefined));
      await sleep(500); // a claim round or two more: nothing is written twice
    } finally {
      await Promise.all([oldWriter.stop(), newWriter.stop()]);
    }
    const rows = await ledger(orgId);
    expect(rows.find((row) => row.request_id === searched.requestId)).toEqual({
      request_id: searched.requestId,
      sell_cost: '0.000000013000',
      web_search_requests: 3,
      cache_read_tokens: 4,
    });
    expect(rows).toHaveLength(2);
    expect(await deadLetters(orgId)).toBe(0);
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(0);
    expect(await pending(orgId)).toEqual([]);
    expect(await awaitingLine()).toMatch(/^gw_usage_records_awaiting_newer_writer 0$/m);
  });

  it('runs one drain at a time: a call while one runs waits for it, then runs one more', async () => {
    const orgId = `org_rd3_${Date.now()}`;
    const records = Array.from({ length: 250 }, () => usageRecord(orgId, 1n));
    for (const record of records) await append(orgId, usageRecordToFields(record));
    let writing = 0;
    let mostAtOnce = 0;
    /** The real sink, watched: how many of its writes run at once. */
    class WatchedSink extends PostgresUsageSink {
      override async write(
        batch: readonly UsageRecord[],
        notices: readonly UsageNotice[] = [],
      ): Promise<void> {
        writing += 1;
        mostAtOnce = Math.max(mostAtOnce, writing);
        try {
          await super.write(batch, notices);
        } finally {
          writing -= 1;
        }
      }
    }
    const writer = testUsageWriter(writerRedis, keys, db, 'rd3-writer', {
      sink: new WatchedSink(db),
    });
    const first = writer.drainOnce();
    await eventually(async () => (writing > 0 ? true : undefined), 5_000, 1);
    // Two calls while it writes: they wait for it, then share one more drain (nothing left).
    const counts = await Promise.all([first, writer.drainOnce(), writer.drainOnce()]);
    expect(counts).toEqual([250, 0, 0]);
    expect(mostAtOnce).toBe(1);
    expect(await ledger(orgId)).toHaveLength(250);

    // Calls made together, none running: one drain, whose count each gets.
    for (const record of records.slice(0, 120).map(() => usageRecord(orgId, 1n))) {
      await append(orgId, usageRecordToFields(record));
    }
    expect(await Promise.all([writer.drainOnce(), writer.drainOnce()])).toEqual([120, 120]);
    expect(mostAtOnce).toBe(1);
    expect(await ledger(orgId)).toHaveLength(370);
  });
});
