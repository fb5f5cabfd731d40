// gw usage rebuild-totals after gw usage prune, on a server whose time zone is not UTC: the
// months of usage_records are partitioned at the server's midnights, so dropping one leaves the
// UTC day (and UTC month) that straddles its bound with part of its records. The rollups keep
// what that day held; the rebuild must not set the day's cache parts and searches from the
// records left while its requests and tokens keep the whole day.
import { expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { withTransaction } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { pruneUsage } from '../src/ledger/retention.js';
import { rebuildRunningTotals } from '../src/ledger/usage-rollups.js';
import { usageRecord } from './support/records.js';
import { withDatabase } from './support/scratch-database.js';

const APPLIED_048 = `UPDATE schema_migrations SET applied_at = '2025-12-15T12:00:00Z'
  WHERE name = '048_prompt_cache_rates.sql'`;

it('keeps a pruned straddling day whole in its cache parts and searches', async () => {
  await withDatabase('h4_prune', APPLIED_048, async (db) => {
    // Partitions as a server in Tokyo (UTC+9) creates them: January ends at 15:00 UTC Jan 31.
    await withTransaction(db, async (client) => {
      await client.query(`SET LOCAL TimeZone = 'Asia/Tokyo'`);
      await client.query(`SELECT gw_ensure_usage_partition('2026-01-01'),
                                 gw_ensure_usage_partition('2026-02-01')`);
    });
    const orgId = await createOrganization(db, 'tokyo');
    const at = (time: string, read: number, searches: number) =>
      usageRecord(orgId, 1000n, {
        createdAt: new Date(time),
        productUserId: 'pu_a',
        inputTokens: 1000,
        cacheReadTokens: read,
        webSearchRequests: searches,
      });
    await new PostgresUsageSink(db).write([
      at('2026-01-31T10:00:00Z', 700, 2), // January's partition
      at('2026-01-31T20:00:00Z', 100, 1), // February's (Feb 1 05:00 in Tokyo)
    ]);
    const day = async () =>
      (
        await db.query(
          `SELECT requests::int, cache_read_tokens::int AS read, web_search_requests::int AS searches
             FROM usage_rollups_daily WHERE org_id = $1 AND day = '2026-01-31'`,
          [orgId],
        )
      ).rows;
    const month = async () =>
      (
        await db.query(
          `SELECT requests::int, cache_read_tokens::int AS read, web_search_requests::int AS searches
             FROM usage_rollups_monthly_product_users WHERE org_id = $1 AND month = '2026-01-01'`,
          [orgId],
        )
      ).rows;
    const whole = [{ requests: 2, read: 800, searches: 3 }];
    expect(await day()).toEqual(whole);
    await pruneUsage(db, { before: '2026-02', apply: true, now: new Date('2026-11-27T00:00:00Z') });
    expect(await day()).toEqual(whole); // the rollups stay, as prune promises
    await rebuildRunningTotals(db);
    expect(await day()).toEqual(whole);
    expect(await month()).toEqual(whole);
  });
});
