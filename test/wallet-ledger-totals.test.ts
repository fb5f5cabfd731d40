// The wallets' running totals (usage_wallet_totals, migration 041) against the sum they replace:
// on real rows written by the usage sink — across months and a year boundary, replays of the
// same request id (alone, in a batch with new rows, twice in one batch), concurrent writers
// sharing records — every wallet's ledger balance, its rebuild into Redis, a top-up's range
// check and gw reconcile read the same figure as sum(transactions) − sum(wallet_cost of every
// usage row). The monthly product-user rollup (042) stays the daily one's monthly sum
// throughout. The migrations backfill both from rows that were there before them.
import { afterAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { Reconciler } from '../src/billing/reconcile.js';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import type { RebuiltTotals } from '../src/ledger/usage-rollups.js';
import { AmountRangeError, MAX_AMOUNT_NANO, numericToNano } from '../src/money.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { baseEnv, TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { runCliJson } from './support/processes.js';
import { usageRecord } from './support/records.js';
import { deletePrefix, testRedis } from './support/services.js';

const prefix = uniquePrefix('ledger-totals');
const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 10);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const { wallets } = createMoneyLayer({ db, redis, keys, scripts, reservationTtlMs: 60_000 });
const sink = new PostgresUsageSink(db);

afterAll(async () => {
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

/** The ledger balance as it was defined before the running totals: a sum over every row. */
async function summedLedgerBalance(pool: DbPool, orgId: string): Promise<bigint> {
  const { rows } = await pool.query<{ funded: string; spent: string }>(
    `SELECT (SELECT COALESCE(sum(amount), 0) FROM wallet_transactions WHERE org_id = $1)::text AS funded,
            (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1)::text AS spent`,
    [orgId],
  );
  return numericToNano(rows[0]!.funded) - numericToNano(rows[0]!.spent);
}

/** Each month's running total and the ledger's own sums for it, side by side. */
async function totalsAgainstRows(pool: DbPool, orgId: string) {
  const { rows } = await pool.query<{ month: string; totals: string; rows: string }>(
    `SELECT to_char(COALESCE(t.month, r.month), 'YYYY-MM') AS month,
            t.records || ' ' || t.wallet_cost AS totals, r.records || ' ' || r.wallet_cost AS rows
       FROM (SELECT month, records, wallet_cost FROM usage_wallet_totals WHERE org_id = $1) t
       FULL JOIN (SELECT date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month,
                         count(*) AS records, sum(wallet_cost) AS wallet_cost
                    FROM usage_records WHERE org_id = $1 GROUP BY 1) r ON r.month = t.month
      ORDER BY 1`,
    [orgId],
  );
  return rows;
}

/** The monthly product-user rollup against the daily rows summed per month. */
async function monthlyAgainstDaily(pool: DbPool, orgId: string) {
  const sums = `sum(requests) || ' ' || sum(input_tokens) || ' ' || sum(output_tokens) || ' ' ||
                sum(total_tokens) || ' ' || sum(sell_cost_nano) || ' ' || sum(wallet_cost_nano) ||
                ' ' || sum(cache_write_tokens) || ' ' || sum(cache_write_1h_tokens) || ' ' ||
                sum(cache_read_tokens) || ' ' || sum(web_search_requests)`;
  const { rows } = await pool.query<{ key: string; monthly: string | null; daily: string | null }>(
    `SELECT COALESCE(m.key, d.key) AS key, m.sums AS monthly, d.sums AS daily
       FROM (SELECT month || product_user_id || currency AS key, ${sums} AS sums
               FROM usage_rollups_monthly_product_users WHERE org_id = $1 GROUP BY 1) m
       FULL JOIN (SELECT date_trunc('month', day)::date || product_user_id || currency AS key,
                         ${sums} AS sums
                    FROM usage_rollups_daily_product_users WHERE org_id = $1 GROUP BY 1) d
         ON d.key = m.key
      ORDER BY 1`,
    [orgId],
  );
  return rows;
}

async function expectExact(orgId: string): Promise<void> {
  expect(await wallets.ledgerBalanceNano(orgId)).toBe(await summedLedgerBalance(db, orgId));
  for (const row of await totalsAgainstRows(db, orgId))
    expect(row.totals, row.month).toBe(row.rows);
  for (const row of await monthlyAgainstDaily(db, orgId))
    expect(row.monthly, row.key).toBe(row.daily);
}

const costly = (orgId: string, walletCostNano: bigint, at: string, user: string | null) =>
  usageRecord(orgId, walletCostNano * 3n + 1n, {
    createdAt: new Date(at),
    walletCostNano,
    productUserId: user,
    cacheWriteTokens: 3,
    cacheWrite1hTokens: 1,
    cacheReadTokens: Number(walletCostNano % 5n),
    webSearchRequests: 2,
  });

describe("a wallet's ledger balance from the running totals", () => {
  it('equals the sum over every usage row across months and a year boundary, replays counted once', async () => {
    const orgId = await createOrganization(db, 'ledger totals');
    await wallets.topUp(orgId, 50_000_000_000n);
    const batch: UsageRecord[] = [
      costly(orgId, 1_234_567_891n, '2025-12-31T23:59:59.999Z', 'pu_a'),
      costly(orgId, 7n, '2026-01-01T00:00:00.000Z', 'pu_a'),
      costly(orgId, 999_999_999n, '2026-01-31T12:00:00Z', null),
      costly(orgId, 0n, '2026-02-15T08:00:00Z', 'pu_b'), // paid by a provider credential
      costly(orgId, 333_333_333_333n, new Date().toISOString(), 'pu_b'),
    ];
    await sink.write(batch);
    await expectExact(orgId);
    const written = await wallets.ledgerBalanceNano(orgId);
    expect(written).toBe(
      50_000_000_000n - batch.reduce((sum, record) => sum + record.walletCostNano, 0n),
    );
    // Replayed whole, replayed beside a new row, and the same entry twice in one batch.
    await sink.write(batch);
    const fresh = costly(orgId, 11n, '2026-01-15T00:00:00Z', 'pu_c');
    await sink.write([batch[0]!, fresh, batch[2]!]);
    await sink.write([fresh, fresh]);
    await expectExact(orgId);
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(written - 11n);
  });

  it('stays exact under concurrent writers that share records', async () => {
    const orgs = [
      await createOrganization(db, 'ledger totals a'),
      await createOrganization(db, 'ledger totals b'),
    ];
    const shared = Array.from({ length: 30 }, (_, i) =>
      costly(orgs[i % 2]!, BigInt(1000 + i), '2026-01-31T23:59:59Z', `pu_${i % 4}`),
    );
    const batches = Array.from({ length: 12 }, (_, b) => [
      ...Array.from({ length: 40 }, (_, i) =>
        costly(
          orgs[(b + i) % 2]!,
          BigInt(b * 1000 + i + 1),
          i % 3 === 0 ? '2026-02-01T00:00:00Z' : new Date().toISOString(),
          i % 5 === 0 ? null : `pu_${i % 7}`,
        ),
      ),
      ...shared.slice((b * 7) % 20, ((b * 7) % 20) + 10),
    ]);
    // Each batch in its own transaction, all at once (the pool has 10 connections).
    await Promise.all(batches.map((records) => sink.write(records)));
    for (const orgId of orgs) await expectExact(orgId);
    const distinct = new Map(batches.flat().map((record) => [record.requestId, record]));
    for (const orgId of orgs) {
      const spent = [...distinct.values()]
        .filter((record) => record.orgId === orgId)
        .reduce((sum, record) => sum + record.walletCostNano, 0n);
      expect(await wallets.ledgerBalanceNano(orgId)).toBe(-spent);
    }
  });

  it('is what a wallet rebuilt in Redis starts from, what gw reconcile compares, and what a top-up checks', async () => {
    const orgId = await createOrganization(db, 'ledger totals rebuild');
    await wallets.topUp(orgId, MAX_AMOUNT_NANO);
    await sink.write([
      costly(orgId, 400n, '2026-01-10T10:00:00Z', 'pu_a'),
      costly(orgId, 600n, new Date().toISOString(), null),
    ]);
    await redis.del(keys.wallet(orgId));
    const live = await wallets.liveBalance(orgId);
    expect(live.balanceNano).toBe(MAX_AMOUNT_NANO - 1000n);
    expect(live.balanceNano).toBe(await summedLedgerBalance(db, orgId));
    const reconciler = new Reconciler(db, redis, keys, scripts);
    const [checked] = await reconciler.run({ orgId, repair: false });
    expect(checked).toMatchObject({ org_id: orgId, status: 'consistent', accounts_checked: 1 });
    // The top-up's range check sees the usage: 1000 nano-units fit again, not one more.
    await expect(wallets.topUp(orgId, 1001n)).rejects.toBeInstanceOf(AmountRangeError);
    await wallets.topUp(orgId, 1000n);
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(MAX_AMOUNT_NANO);
  });

  it('gw usage rebuild-totals counts rows another writer put in the ledger without them', async () => {
    const orgId = await createOrganization(db, 'ledger totals old writer');
    await sink.write([costly(orgId, 5n, new Date().toISOString(), 'pu_a')]);
    // A row as an instance of a version before migration 041 writes it: no running total.
    await db.query(
      `INSERT INTO usage_records (request_id, created_at, org_id, app_id, app_connection_id,
         api_key_id, model, vendor, route, stream, status, input_tokens, output_tokens,
         total_tokens, currency, sell_cost, vendor_cost, wallet_cost, reserved_amount, latency_ms)
       VALUES (gen_random_uuid(), now(), $1, 'app', 'conn', 'key', 'vendor_b/gpt-4o-mini',
         'vendor_b', 'system', false, 'completed', 1, 1, 2, 'USD', 1, 1, 0.000000042, 1, 1)`,
      [orgId],
    );
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(-5n);
    const rebuilt = await runCliJson<RebuiltTotals>(['usage', 'rebuild-totals'], baseEnv(prefix));
    expect(rebuilt.wallet_total_rows).toBeGreaterThan(0);
    expect(rebuilt.product_user_month_rows).toBeGreaterThan(0);
    expect(await wallets.ledgerBalanceNano(orgId)).toBe(-47n);
    await expectExact(orgId);
  });
});

describe('migrations 041, 042 and 051', () => {
  it('build the running totals from the usage already recorded', async () => {
    const url = `${TEST_DATABASE_URL}_migrations`;
    await ensureDatabase(url);
    const fresh = createDbPool(url, 2);
    try {
      await migrate(fresh);
      // The rows, then the three migrations undone and applied again: as on a ledger that
      // had them before the migrations came.
      const orgId = await createOrganization(fresh, 'before 041');
      const records = [
        costly(orgId, 1_000_000_001n, '2025-12-31T23:00:00Z', 'pu_a'),
        costly(orgId, 2n, '2026-01-01T01:00:00Z', 'pu_a'),
        costly(orgId, 3n, '2026-01-20T01:00:00Z', null),
      ];
      await new PostgresUsageSink(fresh).write(records);
      // 048 applied before the rows, so 051 fills their cache parts and searches.
      await fresh.query(
        `UPDATE schema_migrations SET applied_at = '2025-12-01T00:00:00Z'
          WHERE name = '048_prompt_cache_rates.sql'`,
      );
      await fresh.query(
        `DROP TABLE usage_wallet_totals, usage_rollups_monthly_product_users;
         DROP FUNCTION gw_rebuild_usage_wallet_totals(), gw_rebuild_usage_rollups_monthly_product_users(),
           gw_lock_usage_wallet_totals(), gw_rebuild_usage_rollups_cache_parts();
         ALTER TABLE usage_rollups_daily DROP COLUMN cache_write_tokens,
           DROP COLUMN cache_write_1h_tokens, DROP COLUMN cache_read_tokens,
           DROP COLUMN web_search_requests;
         ALTER TABLE usage_rollups_daily_product_users DROP COLUMN cache_write_tokens,
           DROP COLUMN cache_write_1h_tokens, DROP COLUMN cache_read_tokens,
           DROP COLUMN web_search_requests;
         DELETE FROM schema_migrations
          WHERE name IN ('041_usage_wallet_totals.sql', '042_usage_rollups_monthly_product_users.sql',
                         '051_usage_rollups_cache_parts.sql')`,
      );
      expect(await migrate(fresh)).toEqual([
        '041_usage_wallet_totals.sql',
        '042_usage_rollups_monthly_product_users.sql',
        '051_usage_rollups_cache_parts.sql',
      ]);
      const { rows } = await fresh.query<{ month: string; records: string; wallet_cost: string }>(
        `SELECT to_char(month, 'YYYY-MM') AS month, records::text, wallet_cost::text
           FROM usage_wallet_totals WHERE org_id = $1 ORDER BY month`,
        [orgId],
      );
      expect(rows).toEqual([
        { month: '2025-12', records: '1', wallet_cost: '1.000000001000' },
        { month: '2026-01', records: '2', wallet_cost: '0.000000005000' },
      ]);
      // The daily product-user rows carry the records' parts again (none would compare equal
      // below, monthly against daily, too).
      const daily = await fresh.query<{ parts: string }>(
        `SELECT string_agg(product_user_id || ' ' || cache_write_tokens || ' ' ||
                  cache_write_1h_tokens || ' ' || cache_read_tokens || ' ' || web_search_requests,
                  ', ' ORDER BY day, product_user_id) AS parts
           FROM usage_rollups_daily_product_users WHERE org_id = $1`,
        [orgId],
      );
      expect(daily.rows[0]!.parts).toBe('pu_a 3 1 1 2, pu_a 3 1 2 2,  3 1 3 2');
      const monthly = await monthlyAgainstDaily(fresh, orgId);
      expect(monthly).toHaveLength(3);
      for (const row of monthly) expect(row.monthly, row.key).toBe(row.daily);
    } finally {
      await fresh.end();
      const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
      await admin.query(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}"`);
      await admin.end();
    }
  });
});
