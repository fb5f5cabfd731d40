// Decision 333 beyond the writer: a newer version's spooled settle waits in the spool for a
// newer version, and a newer writer beside an older one that parks a record gets it (claim
// rounds are jittered). Real Redis and Postgres.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createMoneyLayer } from '../src/billing/compose.js';
import { createDbPool } from '../src/db/pool.js';
import { KNOWN_ENTRY_NAMES, unknownEntryNames } from '../src/ledger/entry-format.js';
import { usageRecordToFields } from '../src/ledger/usage-record.js';
import { AWAITING_NEWER_WRITER } from '../src/ledger/usage-stream-group.js';
import { createRedisKeys, USAGE_CONSUMER_GROUP } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { usageRecord, walletAccounts } from './support/records.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';
import { spoolFiles, testSettleSpool } from './support/settle-spool.js';
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

describe('a newer version’s spooled settle, replayed by this version', () => {
  it('waits in the spool as it was written, while the entries this version knows are replayed', async () => {
    const orgId = `org_rdr_spool_${Date.now()}`;
    await redis.hset(keys.wallet(orgId), 'balance', '1000000', 'reserved', '0');
    const newerRecord = usageRecord(orgId, 400n, { walletCostNano: 400n });
    const knownRecord = usageRecord(orgId, 300n, { walletCostNano: 300n });
    const accounts = walletAccounts(newerRecord);
    const { spool, dir } = testSettleSpool({ db, redis, keys, budget: store }, prefix);
    await spool.open();
    await spool.append(newerRecord, accounts);
    await spool.append(knownRecord, accounts);
    // The first line as a gateway of a later version spools it: its record names a field this
    // version does not know. A rollback, or an older instance taking the file over.
    const filePath = spoolFiles(dir)[0]!;
    const [first, second] = readFileSync(filePath, 'utf8').trim().split('\n');
    const line = JSON.parse(first!) as { fields: string[] };
    const packed = JSON.parse(line.fields[1]!) as Record<string, string>;
    packed.web_fetch_requests = '2';
    line.fields[1] = JSON.stringify(packed);
    const newerLine = JSON.stringify(line);
    writeFileSync(filePath, `${newerLine}\n${second}\n`);

    await eventually(async () => {
      await spool.replay();
      return readFileSync(filePath, 'utf8') === `${newerLine}\n` ? true : undefined;
    });
    await spool.stop();
    // The known entry was settled (300), the newer one not (it waits, byte for byte).
    expect(await redis.hget(keys.wallet(orgId), 'balance')).toBe('999700');
    const entries = await redis.xrange(keys.usageStream(orgId), '-', '+');
    expect(entries).toHaveLength(1);
    expect(unknownEntryNames(entries[0]![1], KNOWN_ENTRY_NAMES)).toEqual([]);
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a newer writer beside the older writer that parked a record', () => {
  it('gets the record within a few claim rounds', async () => {
    const orgId = `org_rdr_claim_${Date.now()}`;
    const stream = keys.usageStream(orgId);
    await redis.sadd(keys.usageStreamRegistry(), stream);
    const claimIdleMs = 1_000;
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
      // Jittered rounds: the writer whose round comes first after the entry is idle again
      // claims it, so the new writer wins about every other period; 15 periods leave it a
      // chance of 1 in 30,000 to lose them all.
      const deadline = Date.now() + 15 * claimIdleMs;
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
      // With rounds claimIdleMs/2 apart, the old writer's own round always came first once the
      // entry was idle (parking reset the idle time in step with them): it parked the record
      // again every claimIdleMs until that instance stopped.
      expect({ written, deliveries: entry?.[3] ?? 0 }).toEqual({ written: true, deliveries: 0 });
    } finally {
      await Promise.all([oldWriter.stop(), newWriter.stop()]);
    }
  }, 40_000);
});
