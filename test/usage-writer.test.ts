// The batch writer against real Redis and Postgres: rows land, replays are harmless, and
// entries a dead instance read but never acknowledged are claimed and written.
import { createMoneyLayer } from '../src/billing/compose.js';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisBudgetStore } from '../src/billing/redis-budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { usageRecord } from './support/records.js';
import { UsageStreamWriter } from '../src/ledger/usage-writer.js';
import { pendingUsageRecords } from '../src/ledger/usage-backlog.js';
import { GatewayMetrics } from '../src/metrics.js';
import { createRedisKeys, USAGE_CONSUMER_GROUP } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('writer');
const redis = testRedis();
const writerRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { loader, budget: store } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: 60_000,
});
/** Settles a record that touched no account (only its usage is of interest here). */
const settle = (record: UsageRecord, through: RedisBudgetStore = store) =>
  through.settle(record, {
    orgId: record.orgId,
    appConnectionId: record.appConnectionId,
    orgCap: null,
    connectionCap: null,
    user: null,
  });
const metrics = new GatewayMetrics(false);

function usage(orgId: string, sellCostNano: bigint): UsageRecord {
  return usageRecord(orgId, sellCostNano, {
    productUserId: 'pu_w',
    stream: true,
    inputTokens: 11,
    outputTokens: 7,
    reservedNano: sellCostNano * 2n,
  });
}

function writer(name: string, claimIdleMs: number): UsageStreamWriter {
  return testUsageWriter(writerRedis, keys, db, name, { claimIdleMs, metrics });
}

async function ledgerRows(
  orgId: string,
): Promise<Array<{ request_id: string; sell_cost: string; total_tokens: number }>> {
  const { rows } = await db.query<{ request_id: string; sell_cost: string; total_tokens: number }>(
    'SELECT request_id, sell_cost::text, total_tokens FROM usage_records WHERE org_id = $1 ORDER BY request_id',
    [orgId],
  );
  return rows;
}

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await deletePrefix(redis, `${prefix}-backlog`);
  await Promise.all([redis.quit(), writerRedis.quit()]);
  await db.end();
});

describe('usage writer', () => {
  it('writes settled records to usage_records with exact decimals, then trims the stream', async () => {
    const orgId = `org_w1_${Date.now()}`;
    const records = [usage(orgId, 1_234_567_891n), usage(orgId, 1n)];
    for (const record of records) await settle(record);
    const running = writer('w1', 30_000);
    running.start();
    const rows = await eventually(async () => {
      const found = await ledgerRows(orgId);
      return found.length === 2 ? found : undefined;
    });
    await running.stop();
    const byId = new Map(rows.map((row) => [row.request_id, row]));
    expect(byId.get(records[0]!.requestId)?.sell_cost).toBe('1.234567891000');
    expect(byId.get(records[1]!.requestId)?.sell_cost).toBe('0.000000001000');
    expect(rows[0]!.total_tokens).toBe(18);
    expect(await redis.xlen(keys.usageStream(orgId))).toBe(0);
  });

  it('claims entries a dead consumer read but never acknowledged', async () => {
    const orgId = `org_w2_${Date.now()}`;
    const record = usage(orgId, 42n);
    await settle(record);
    const stream = keys.usageStream(orgId);
    await redis
      .xgroup('CREATE', stream, USAGE_CONSUMER_GROUP, '0', 'MKSTREAM')
      .catch(() => undefined);
    // A consumer that reads the entry and dies before writing it.
    const read = await redis.call(
      'XREADGROUP',
      'GROUP',
      USAGE_CONSUMER_GROUP,
      'dead-instance',
      'COUNT',
      '10',
      'STREAMS',
      stream,
      '>',
    );
    expect(read).not.toBeNull();
    expect(await ledgerRows(orgId)).toEqual([]);

    const survivor = writer('survivor', 200);
    await new Promise((resolve) => setTimeout(resolve, 250)); // let the entry go idle
    survivor.start();
    const rows = await eventually(async () => {
      const found = await ledgerRows(orgId);
      return found.length === 1 ? found : undefined;
    });
    await survivor.stop();
    expect(rows[0]!.request_id).toBe(record.requestId);
    const pending = (await redis.xpending(stream, USAGE_CONSUMER_GROUP)) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
  });

  it('keeps reading a stream the registry lost, and puts it back in the registry', async () => {
    // A cluster shard holding the registry restarted empty while the org's shard did not (or
    // both did): the gateways announce their orgs again only once a minute.
    const orgId = `org_w4_${Date.now()}`;
    const stream = keys.usageStream(orgId);
    await settle(usage(orgId, 7n));
    const running = writer('w4', 30_000);
    running.start();
    try {
      await eventually(async () => ((await ledgerRows(orgId)).length === 1 ? true : undefined));
      await redis.del(keys.usageStreamRegistry());
      // the writer reads the registry (every second or so), misses the stream and puts it back
      await eventually(async () =>
        (await redis.sismember(keys.usageStreamRegistry(), stream)) === 1 ? true : undefined,
      );
      const later = usage(orgId, 9n);
      await settle(later); // within the minute: the store does not announce the stream again
      const rows = await eventually(async () => {
        const found = await ledgerRows(orgId);
        return found.length === 2 ? found : undefined;
      });
      expect(rows.map((row) => row.request_id)).toContain(later.requestId);
      expect(await redis.sismember(keys.usageStreamRegistry(), stream)).toBe(1);
    } finally {
      await running.stop();
    }
  });

  it('stops at once, not after its pause (a long flush interval does not hold up shutdown)', async () => {
    // No streams under this prefix: the loop pauses a whole interval.
    const idle = testUsageWriter(writerRedis, createRedisKeys(`${prefix}-idle`), db, 'idle', {
      flushIntervalMs: 60_000,
      metrics,
    });
    idle.start();
    await new Promise((resolve) => setTimeout(resolve, 200)); // into its pause
    const startedMs = Date.now();
    await idle.stop();
    expect(Date.now() - startedMs).toBeLessThan(5_000);
  });

  it('writes a replayed entry once (ON CONFLICT DO NOTHING)', async () => {
    const orgId = `org_w3_${Date.now()}`;
    const record = usage(orgId, 5n);
    const sink = new PostgresUsageSink(db);
    await sink.write([record]);
    await sink.write([record]);
    expect(await ledgerRows(orgId)).toHaveLength(1);
  });

  it('reports the records waiting for Postgres in /metrics until the writer has written them', async () => {
    const backlogKeys = createRedisKeys(`${prefix}-backlog`);
    const backlogStore = new RedisBudgetStore(redis, backlogKeys, scripts, loader, 60_000);
    const backlogMetrics = new GatewayMetrics(false, () => pendingUsageRecords(redis, backlogKeys));
    const pendingLine = async (): Promise<string> =>
      backlogMetrics.registry.getSingleMetricAsString('gw_usage_records_pending');
    expect(await pendingLine()).toMatch(/^gw_usage_records_pending 0$/m);

    for (const orgId of [`org_bl_a_${Date.now()}`, `org_bl_b_${Date.now()}`]) {
      for (let index = 0; index < 2; index += 1) await settle(usage(orgId, 10n), backlogStore);
    }
    expect(await pendingLine()).toMatch(/^gw_usage_records_pending 4$/m);

    const backlogWriter = testUsageWriter(writerRedis, backlogKeys, db, 'backlog', { metrics });
    expect(await backlogWriter.drainOnce()).toBe(4);
    expect(await pendingLine()).toMatch(/^gw_usage_records_pending 0$/m);
  });
});
