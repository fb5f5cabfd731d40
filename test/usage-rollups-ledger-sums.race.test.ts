// Every column of the three usage rollups equals the ledger's sums after batches spanning days,
// months, currencies and rows without a product user, one of them replayed; and gw usage
// rebuild-totals run while writers write neither deadlocks nor loses a part.
import { describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { rebuildRunningTotals } from '../src/ledger/usage-rollups.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { usageRecord } from './support/records.js';
import { withDatabase } from './support/scratch-database.js';

const COLS = `count(*)::text AS requests, sum(input_tokens)::text AS input_tokens,
  sum(output_tokens)::text AS output_tokens, sum(total_tokens)::text AS total_tokens,
  sum((sell_cost * 1000000000)::bigint)::text AS sell, sum((wallet_cost * 1000000000)::bigint)::text AS wallet,
  sum(cache_write_tokens)::text AS w, sum(cache_write_1h_tokens)::text AS w1h,
  sum(cache_read_tokens)::text AS r, sum(web_search_requests)::text AS s`;
const ROLL = `requests::text AS requests, input_tokens::text AS input_tokens,
  output_tokens::text AS output_tokens, total_tokens::text AS total_tokens,
  sell_cost_nano::text AS sell, wallet_cost_nano::text AS wallet,
  cache_write_tokens::text AS w, cache_write_1h_tokens::text AS w1h,
  cache_read_tokens::text AS r, web_search_requests::text AS s`;

async function compare(db: DbPool): Promise<void> {
  const q = async (sql: string) => (await db.query(sql)).rows;
  expect(
    await q(`SELECT org_id, day::text, model, app_connection_id, currency, ${ROLL}
      FROM usage_rollups_daily ORDER BY 1,2,3,4,5`),
  ).toEqual(
    await q(`SELECT org_id, ((created_at AT TIME ZONE 'UTC')::date)::text AS day, model,
      app_connection_id, currency, ${COLS} FROM usage_records GROUP BY 1,2,3,4,5 ORDER BY 1,2,3,4,5`),
  );
  expect(
    await q(`SELECT org_id, day::text, product_user_id, currency, ${ROLL}
      FROM usage_rollups_daily_product_users ORDER BY 1,2,3,4`),
  ).toEqual(
    await q(`SELECT org_id, ((created_at AT TIME ZONE 'UTC')::date)::text AS day,
      COALESCE(product_user_id, '') AS product_user_id, currency, ${COLS}
      FROM usage_records GROUP BY 1,2,3,4 ORDER BY 1,2,3,4`),
  );
  expect(
    await q(`SELECT org_id, month::text, product_user_id, currency, ${ROLL}
      FROM usage_rollups_monthly_product_users ORDER BY 1,2,3,4`),
  ).toEqual(
    await q(`SELECT org_id, (date_trunc('month', created_at AT TIME ZONE 'UTC')::date)::text AS month,
      COALESCE(product_user_id, '') AS product_user_id, currency, ${COLS}
      FROM usage_records GROUP BY 1,2,3,4 ORDER BY 1,2,3,4`),
  );
}

const now = new Date();
const thisMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
const TIMES = [thisMonth - 1, thisMonth, thisMonth + 3_600_000, thisMonth + 86_400_000 + 5];

function batch(orgs: string[], n: number, seed: number): UsageRecord[] {
  const out: UsageRecord[] = [];
  for (let i = 0; i < n; i++) {
    const k = seed * 7919 + i * 31;
    out.push(
      usageRecord(orgs[k % orgs.length]!, BigInt(1000 + (k % 977)), {
        createdAt: new Date(TIMES[k % TIMES.length]!),
        productUserId: k % 3 === 0 ? null : `pu_${k % 5}`,
        currency: k % 4 === 0 ? 'EUR' : 'USD',
        model: k % 2 ? 'vendor_a/m' : 'vendor_b/n',
        appConnectionId: `conn_${k % 3}`,
        inputTokens: 1000 + (k % 13),
        outputTokens: k % 17,
        walletCostNano: BigInt(k % 11) * 1000n,
        cacheWriteTokens: k % 19,
        cacheWrite1hTokens: k % 7,
        cacheReadTokens: k % 23,
        webSearchRequests: k % 3,
      }),
    );
  }
  return out;
}

describe('the usage rollups against the ledger', () => {
  it('every column equals the ledger sums: batches across days, months, currencies, replayed', async () => {
    await withDatabase('h4_exact', 'SELECT 1', async (db) => {
      await db.query(
        `SELECT gw_ensure_usage_partition((date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date)`,
      );
      const orgs = [await createOrganization(db, 'a'), await createOrganization(db, 'b')];
      const sink = new PostgresUsageSink(db);
      const first = batch(orgs, 60, 1);
      await sink.write(first);
      await sink.write([...first.slice(0, 30), ...batch(orgs, 40, 2)]); // a replay with new rows
      await compare(db);
      await rebuildRunningTotals(db);
      await compare(db);
    });
  });

  it('rebuild-totals while writers write: no deadlock, sums exact', async () => {
    await withDatabase('h4_race', 'SELECT 1', async (small) => {
      await small.query(
        `SELECT gw_ensure_usage_partition((date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date)`,
      );
      const orgs = [await createOrganization(small, 'a'), await createOrganization(small, 'b')];
      const db = createDbPool(`${TEST_DATABASE_URL}_h4_race`, 8);
      try {
        const sinks = [0, 1, 2, 3, 4].map(() => new PostgresUsageSink(db));
        const writes = sinks.map(async (sink, w) => {
          for (let round = 0; round < 15; round++)
            await sink.write(batch(orgs, 20, w * 100 + round));
        });
        const rebuilds = (async () => {
          for (let i = 0; i < 8; i++) await rebuildRunningTotals(db);
        })();
        const results = await Promise.allSettled([...writes, rebuilds]);
        expect(
          results
            .filter((r) => r.status === 'rejected')
            .map((r) => String((r as PromiseRejectedResult).reason)),
        ).toEqual([]);
        await compare(db);
      } finally {
        await db.end();
      }
    });
  }, 60_000);
});
