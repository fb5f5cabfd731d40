// Migration 051 adds the prompt's cache parts and the web searches to the three usage rollups and
// fills them from the records that have any, written since 048 was applied (a day's margin for
// the gateways' clocks): on a ledger written before 051 came (rows across a UTC midnight, a
// month's end, a request without a product user, a second currency), each rollup row carries
// exactly its records' sums, grouped as the usage writer groups them. `gw usage rebuild-totals`
// sets them again for what a writer that does not sum them left.
import { describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { migrate } from '../src/db/migrate.js';
import type { DbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { readUsageRollups, rebuildRunningTotals } from '../src/ledger/usage-rollups.js';
import { usageRecord } from './support/records.js';
import { withDatabase } from './support/scratch-database.js';

/** 048 applied at 15:00 UTC on 2026-03-10: records from 2026-03-09 on are read. */
const APPLIED_048 = `UPDATE schema_migrations SET applied_at = '2026-03-10T15:00:00Z'
  WHERE name = '048_prompt_cache_rates.sql'`;

/** The schema as it was before 051 (042's function is left replaced: 051 replaces it again). */
const UNDO_051 = ['usage_rollups_daily', 'usage_rollups_daily_product_users']
  .concat('usage_rollups_monthly_product_users')
  .map(
    (table) => `ALTER TABLE ${table} DROP COLUMN cache_write_tokens,
      DROP COLUMN cache_write_1h_tokens, DROP COLUMN cache_read_tokens,
      DROP COLUMN web_search_requests;`,
  )
  .concat(
    'DROP FUNCTION gw_rebuild_usage_rollups_cache_parts();',
    "DELETE FROM schema_migrations WHERE name = '051_usage_rollups_cache_parts.sql';",
  )
  .join('\n');

const PARTS = `requests::int, cache_write_tokens::int AS write, cache_write_1h_tokens::int AS write_1h,
  cache_read_tokens::int AS read, web_search_requests::int AS searches`;

async function rollups(db: DbPool, orgId: string) {
  const daily = await db.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, model, app_connection_id AS conn, currency, ${PARTS}
       FROM usage_rollups_daily WHERE org_id = $1 ORDER BY day, model, currency`,
    [orgId],
  );
  const users = await db.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, product_user_id AS user, currency, ${PARTS}
       FROM usage_rollups_daily_product_users WHERE org_id = $1
      ORDER BY day, product_user_id, currency`,
    [orgId],
  );
  const months = await db.query(
    `SELECT to_char(month, 'YYYY-MM') AS month, product_user_id AS user, currency, ${PARTS}
       FROM usage_rollups_monthly_product_users WHERE org_id = $1
      ORDER BY month, product_user_id, currency`,
    [orgId],
  );
  return { daily: daily.rows, users: users.rows, months: months.rows };
}

const EXPECTED = {
  daily: [
    {
      day: '2026-03-05',
      model: 'vendor_a/m',
      conn: 'conn_1',
      currency: 'USD',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 0,
      searches: 0,
    },
    {
      day: '2026-03-09',
      model: 'vendor_a/m',
      conn: 'conn_1',
      currency: 'USD',
      requests: 1,
      write: 100,
      write_1h: 40,
      read: 7,
      searches: 1,
    },
    {
      day: '2026-03-10',
      model: 'vendor_a/m',
      conn: 'conn_1',
      currency: 'USD',
      requests: 2,
      write: 5,
      write_1h: 0,
      read: 311,
      searches: 3,
    },
    {
      day: '2026-03-31',
      model: 'vendor_b/n',
      conn: 'conn_2',
      currency: 'EUR',
      requests: 1,
      write: 9,
      write_1h: 9,
      read: 0,
      searches: 0,
    },
    {
      day: '2026-04-01',
      model: 'vendor_b/n',
      conn: 'conn_2',
      currency: 'EUR',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 2,
      searches: 4,
    },
  ],
  users: [
    {
      day: '2026-03-05',
      user: 'pu_a',
      currency: 'USD',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 0,
      searches: 0,
    },
    {
      day: '2026-03-09',
      user: 'pu_a',
      currency: 'USD',
      requests: 1,
      write: 100,
      write_1h: 40,
      read: 7,
      searches: 1,
    },
    {
      day: '2026-03-10',
      user: '',
      currency: 'USD',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 11,
      searches: 3,
    },
    {
      day: '2026-03-10',
      user: 'pu_a',
      currency: 'USD',
      requests: 1,
      write: 5,
      write_1h: 0,
      read: 300,
      searches: 0,
    },
    {
      day: '2026-03-31',
      user: 'pu_a',
      currency: 'EUR',
      requests: 1,
      write: 9,
      write_1h: 9,
      read: 0,
      searches: 0,
    },
    {
      day: '2026-04-01',
      user: 'pu_a',
      currency: 'EUR',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 2,
      searches: 4,
    },
  ],
  months: [
    {
      month: '2026-03',
      user: '',
      currency: 'USD',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 11,
      searches: 3,
    },
    {
      month: '2026-03',
      user: 'pu_a',
      currency: 'EUR',
      requests: 1,
      write: 9,
      write_1h: 9,
      read: 0,
      searches: 0,
    },
    {
      month: '2026-03',
      user: 'pu_a',
      currency: 'USD',
      requests: 3,
      write: 105,
      write_1h: 40,
      read: 307,
      searches: 1,
    },
    {
      month: '2026-04',
      user: 'pu_a',
      currency: 'EUR',
      requests: 1,
      write: 0,
      write_1h: 0,
      read: 2,
      searches: 4,
    },
  ],
};

describe('migration 051', () => {
  it('fills the rollups with the cache parts and searches of the records written before it', async () => {
    await withDatabase('rollup_cache_parts', APPLIED_048, async (db) => {
      const orgId = await createOrganization(db, 'before 051');
      const at = (time: string, parts: Parts, overrides: Partial<UsageRecord> = {}) =>
        usageRecord(orgId, 1000n, {
          createdAt: new Date(time),
          model: 'vendor_a/m',
          appConnectionId: 'conn_1',
          productUserId: 'pu_a',
          inputTokens: 1000,
          cacheWriteTokens: parts[0],
          cacheWrite1hTokens: parts[1],
          cacheReadTokens: parts[2],
          webSearchRequests: parts[3],
          ...overrides,
        });
      const euro = { model: 'vendor_b/n', appConnectionId: 'conn_2', currency: 'EUR' };
      const sink = new PostgresUsageSink(db);
      await sink.write([
        // Before 048 (and its day of margin) no writer knew the parts: the fill does not read
        // there, so what such a record names (imported data, say) stays out of the rollups.
        at('2026-03-05T10:00:00Z', [50, 0, 3, 2]),
        at('2026-03-09T23:30:00Z', [100, 40, 7, 1]), // the day before 048's: a clock behind
        at('2026-03-10T00:30:00Z', [5, 0, 300, 0]),
        at('2026-03-10T20:00:00Z', [0, 0, 11, 3], { productUserId: null }),
        at('2026-03-31T23:59:59.999Z', [9, 9, 0, 0], euro),
        at('2026-04-01T00:00:00Z', [0, 0, 2, 4], euro),
      ]);
      // As a writer before 051 left them: the rollups without the four sums.
      await db.query(UNDO_051);
      expect(await migrate(db)).toEqual(['051_usage_rollups_cache_parts.sql']);
      expect(await rollups(db, orgId)).toEqual(EXPECTED);

      // The usage API's rows carry them, summed over the groups.
      const byModel = await readUsageRollups(db, {
        orgId,
        groupBy: 'model',
        from: new Date('2026-03-01T00:00:00Z'),
        to: new Date('2026-05-01T00:00:00Z'),
        limit: 10,
      });
      expect(
        byModel.map((row) => [
          row.key,
          row.currency,
          row.requests,
          row.cache_write_tokens,
          row.cache_write_1h_tokens,
          row.cache_read_tokens,
          row.web_search_requests,
        ]),
      ).toEqual([
        ['vendor_a/m', 'USD', 4, 105, 40, 318, 4],
        ['vendor_b/n', 'EUR', 2, 9, 9, 2, 4],
      ]);

      // A record whose rollups a writer that does not sum the parts wrote (an older instance
      // during a rollout): rebuild-totals sets them from the records, the others unchanged.
      await sink.write([at('2026-04-01T08:00:00Z', [1, 1, 50, 2], euro)]);
      for (const [table, column] of [
        ['usage_rollups_daily', 'day'],
        ['usage_rollups_daily_product_users', 'day'],
        ['usage_rollups_monthly_product_users', 'month'],
      ]) {
        await db.query(
          `UPDATE ${table} SET cache_write_tokens = 0, cache_write_1h_tokens = 0,
                  cache_read_tokens = 2, web_search_requests = 4
            WHERE org_id = $1 AND ${column} = '2026-04-01'`,
          [orgId],
        );
      }
      await rebuildRunningTotals(db);
      const april = { requests: 2, write: 1, write_1h: 1, read: 52, searches: 6 };
      expect(await rollups(db, orgId)).toEqual({
        daily: [...EXPECTED.daily.slice(0, 4), { ...EXPECTED.daily[4], ...april }],
        users: [...EXPECTED.users.slice(0, 5), { ...EXPECTED.users[5], ...april }],
        months: [...EXPECTED.months.slice(0, 3), { ...EXPECTED.months[3], ...april }],
      });
    });
  });
});

/** Cache writes, of them for an hour, cache reads, searches. */
type Parts = [number, number, number, number];
