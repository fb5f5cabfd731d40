// Review of decision 333 (forward-compatible usage writer): paths by which a newer version's
// usage record still loses the fields this version does not know, or waits longer than the
// decision says. Real Redis and Postgres.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { SettleSpool } from '../src/billing/settle-spool.js';
import { createDbPool } from '../src/db/pool.js';
import { KNOWN_ENTRY_NAMES, unknownEntryNames } from '../src/ledger/entry-format.js';
import { RecordedUsage } from '../src/ledger/recorded-usage.js';
import { usageRecordToFields } from '../src/ledger/usage-record.js';
import { AWAITING_NEWER_WRITER } from '../src/ledger/usage-stream-group.js';
import { createLogger } from '../src/log.js';
import { GatewayMetrics } from '../src/metrics.js';
import { createRedisKeys, USAGE_CONSUMER_GROUP } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { testUsageWriter } from './support/usage-writer.js';

const prefix = uniquePrefix('rd-review');
const redis = testRedis();
const oldWriterRedis = testRedis();
const newWriterRedis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { budget: store } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await Promise.all([redis.quit(), oldWriterRedis.quit(), newWriterRedis.quit()]);
  await db.end();
});

describe('a newer version’s spooled settle replayed by this version', () => {
  it('keeps the fields this version does not know (the writer can then leave it for a newer one)', async () => {
    const orgId = `org_rdr_spool_${Date.now()}`;
    await redis.hset(keys.wallet(orgId), 'balance', '1000000', 'reserved', '0');
    const record = usageRecord(orgId, 400n, { walletCostNano: 400n });
    const accounts: RequestAccounts = {
      orgId,
      appConnectionId: record.appConnectionId,
      orgCap: null,
      connectionCap: null,
      user: null,
      walletPays: true,
      credentials: null,
    };
    const dir = mkdtempSync(path.join(tmpdir(), 'gw-spool-review-'));
    const spool = new SettleSpool(
      { dir, namespace: prefix },
      {
        budget: store,
        recorded: new RecordedUsage(redis, db, keys),
        redisReady: () => true,
        logger: createLogger('silent'),
        counters: new GatewayMetrics(false),
      },
    );
    await spool.open();
    await spool.append(record, accounts);
    // The line as a gateway of a later version spools it: its record names a field this
    // version does not know (the spool keeps a record as its stream fields so that "every
    // field of the record travels"). A rollback, or an older instance taking the file over.
    const [file] = readdirSync(dir).filter((name) => name.endsWith('.spool'));
    const filePath = path.join(dir, file!);
    const line = JSON.parse(readFileSync(filePath, 'utf8').trim()) as { fields: string[] };
    const packed = JSON.parse(line.fields[1]!) as Record<string, string>;
    packed.web_fetch_requests = '2';
    line.fields[1] = JSON.stringify(packed);
    writeFileSync(filePath, `${JSON.stringify(line)}\n`);

    await eventually(async () => {
      await spool.replay();
      return readdirSync(dir).filter((name) => name.endsWith('.spool')).length === 0
        ? true
        : undefined;
    });
    await spool.stop();
    expect(await redis.hget(keys.wallet(orgId), 'balance')).toBe('999600');
    const entries = await redis.xrange(keys.usageStream(orgId), '-', '+');
    expect(entries).toHaveLength(1);
    // The settled entry still names the newer field: a writer of this version leaves it for a
    // newer one instead of writing the row without it (decision 333). It is dropped instead.
    expect(unknownEntryNames(entries[0]![1], KNOWN_ENTRY_NAMES)).toEqual(['web_fetch_requests']);
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a newer writer beside the older writer that parked a record', () => {
  it('gets the record within a few claim rounds (docs: "sooner while both run")', async () => {
    const orgId = `org_rdr_claim_${Date.now()}`;
    const stream = keys.usageStream(orgId);
    await redis.sadd(keys.usageStreamRegistry(), stream);
    const claimIdleMs = 2_000;
    // Production's ratio of flush interval to claim idle time is about 1:600 (50 ms, 30 s).
    const flushIntervalMs = 5;
    const beforeSearches = new Set(KNOWN_ENTRY_NAMES);
    beforeSearches.delete('web_search_requests');
    const oldWriter = testUsageWriter(oldWriterRedis, keys, db, 'rdr-old', {
      claimIdleMs,
      flushIntervalMs,
      knownEntryNames: beforeSearches,
    });
    const newWriter = testUsageWriter(newWriterRedis, keys, db, 'rdr-new', {
      claimIdleMs,
      flushIntervalMs,
    });
    oldWriter.start();
    try {
      const record = usageRecord(orgId, 5n, { webSearchRequests: 2 });
      await redis.xadd(stream, '*', ...usageRecordToFields(record));
      // The old writer parks it, then claims it again in one of its claim rounds and parks it
      // once more (delivered twice): from now on it is parked in step with that writer's rounds.
      await eventually(
        async () => {
          const [entry] = (await redis
            .xpending(stream, USAGE_CONSUMER_GROUP, '-', '+', 1)
            .catch(() => [])) as Array<[string, string, number, number]>;
          return entry && entry[1] === AWAITING_NEWER_WRITER && entry[3] >= 2 ? true : undefined;
        },
        10_000,
        10,
      );
      // A newer instance comes up (its rounds at another phase, as any instance's would be).
      await sleep(claimIdleMs / 4);
      newWriter.start();
      // Four times the claim idle time: two of the new writer's rounds per idle period.
      const deadline = Date.now() + 4 * claimIdleMs;
      let written = false;
      while (!written && Date.now() < deadline) {
        const { rows } = await db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [
          record.requestId,
        ]);
        written = rows.length === 1;
        if (!written) await sleep(25);
      }
      const [entry] = (await redis.xpending(stream, USAGE_CONSUMER_GROUP, '-', '+', 1)) as Array<
        [string, string, number, number]
      >;
      // Fails: the old writer's own round always comes first once the entry is idle (its
      // rounds are claimIdleMs/2 apart and parking reset the idle time in step with them), so
      // it parks the record again every claimIdleMs until that instance stops.
      expect({ written, deliveries: entry?.[3] ?? 0 }).toEqual({ written: true, deliveries: 0 });
    } finally {
      await Promise.all([oldWriter.stop(), newWriter.stop()]);
    }
  }, 30_000);
});
