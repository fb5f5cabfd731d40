// gw usage prune: whole months of usage_records dropped, the wallets' ledger balances kept to
// the nano-unit through 'usage_archived' transactions (the running totals lose the months, the
// rollups keep them), recent months refused. Uses December 2000 and January 2001, which no
// other test writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerBalanceNano } from '../src/billing/ledger-amounts.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { formatNano, numericToNano } from '../src/money.js';
import { isolatedContext } from './support/context.js';
import { runCli, runCliJson, seed, type SeededOrg } from './support/processes.js';
import { usageRecord } from './support/records.js';

const { env, db } = isolatedContext('retention', { ownDatabase: true });
let org: SeededOrg;

/** The ledger balance as the sum over every usage row, and as read from the running totals. */
async function ledgerBalances(orgId: string): Promise<{ summed: string; totals: string }> {
  const { rows } = await db.query<{ balance: string }>(
    `SELECT ((SELECT COALESCE(sum(amount), 0) FROM wallet_transactions WHERE org_id = $1)
            - (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1))::text AS balance`,
    [orgId],
  );
  return {
    summed: formatNano(numericToNano(rows[0]!.balance)),
    totals: formatNano(await ledgerBalanceNano(db, orgId)),
  };
}

/** The org's monthly product-user rollup, and its daily one summed per month. */
async function productUserMonths(orgId: string): Promise<{ monthly: unknown[]; daily: unknown[] }> {
  const read = async (sql: string) => (await db.query(sql, [orgId])).rows;
  return {
    monthly: await read(
      `SELECT to_char(month, 'YYYY-MM') AS month, requests::text, sell_cost_nano::text
         FROM usage_rollups_monthly_product_users WHERE org_id = $1 ORDER BY 1`,
    ),
    daily: await read(
      `SELECT to_char(day, 'YYYY-MM') AS month, sum(requests)::text AS requests,
              sum(sell_cost_nano)::text AS sell_cost_nano
         FROM usage_rollups_daily_product_users WHERE org_id = $1 GROUP BY 1 ORDER BY 1`,
    ),
  };
}

beforeAll(async () => {
  org = await seed(env);
  // Written as the usage writer writes them, the rollups and running totals with them.
  const sink = new PostgresUsageSink(db);
  await sink.write(
    [
      ['2000-12-31T23:30:00Z', 500_000_000n],
      ['2001-01-10T12:00:00Z', 1_500_000_000n],
      ['2001-01-11T12:00:00Z', 250_000_001n],
      ['2001-01-12T12:00:00Z', 2_000_000_000n],
    ].map(([at, cost]) =>
      usageRecord(org.org_id, cost as bigint, {
        createdAt: new Date(at as string),
        walletCostNano: cost as bigint,
        appId: org.app_id,
        appConnectionId: org.app_connection_id,
      }),
    ),
  );
});

afterAll(async () => {
  await db.query('DROP TABLE IF EXISTS usage_records_2000_12, usage_records_2001_01');
});

interface PruneReport {
  applied: boolean;
  months: Array<{ name: string; month: string; rows: number; orgs: number; wallet_cost: string }>;
}

describe("the ledger's lookup indexes (migration 040)", () => {
  // What each index holds after USING btree: its keys, and the columns the sums read.
  const EXPECTED = [
    '(api_key_id, created_at) INCLUDE (sell_cost, input_tokens, output_tokens)',
    '(app_connection_id, created_at) INCLUDE (sell_cost)',
    '(org_id, created_at) INCLUDE (sell_cost, wallet_cost)',
    '(product_user_id, created_at) INCLUDE (sell_cost, input_tokens, output_tokens)',
    '(request_id, created_at)',
  ];

  it('are on every month partition, a month created after the migration included, and valid', async () => {
    const { rows } = await db.query<{ partition: string; def: string; valid: boolean }>(
      `SELECT c.relname AS partition, pg_get_indexdef(i.indexrelid) AS def, i.indisvalid AS valid
         FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
         JOIN pg_index i ON i.indrelid = c.oid
        WHERE h.inhparent = 'usage_records'::regclass`,
    );
    const byPartition = new Map<string, string[]>();
    for (const row of rows) {
      expect(row.valid).toBe(true);
      const held = row.def.slice(row.def.indexOf(' USING btree ') + ' USING btree '.length);
      byPartition.set(row.partition, [...(byPartition.get(row.partition) ?? []), held]);
    }
    // usage_records_2001_01 was created by this file's beforeAll, long after migration 040.
    expect([...byPartition.keys()]).toContain('usage_records_2001_01');
    for (const [partition, held] of byPartition) {
      expect({ partition, held: held.sort() }).toEqual({ partition, held: EXPECTED });
    }
    const parent = await db.query<{ def: string; valid: boolean }>(
      `SELECT pg_get_indexdef(indexrelid) AS def, indisvalid AS valid FROM pg_index
        WHERE indrelid = 'usage_records'::regclass`,
    );
    expect(parent.rows.every((row) => row.valid)).toBe(true);
    expect(parent.rows).toHaveLength(EXPECTED.length);
  });
});

describe('gw usage prune', () => {
  it('lists the months it would drop, and changes nothing without --apply', async () => {
    const report = await runCliJson<PruneReport>(['usage', 'prune', '--before', '2001-02'], env);
    expect(report.applied).toBe(false);
    const january = report.months.find((month) => month.month === '2001-01');
    expect(january).toMatchObject({ name: 'usage_records_2001_01', rows: 3, orgs: 1 });
    expect(january!.wallet_cost).toBe('3.750000001000');
    const { rows } = await db.query("SELECT to_regclass('usage_records_2001_01') AS t");
    expect(rows[0].t).not.toBeNull();
  });

  it('drops the months with --apply and keeps every wallet balance exact', async () => {
    const before = await ledgerBalances(org.org_id);
    expect(before.totals).toBe(before.summed);
    const rollupsBefore = await productUserMonths(org.org_id);
    expect(rollupsBefore.monthly).toEqual(rollupsBefore.daily);
    const report = await runCliJson<PruneReport>(
      ['usage', 'prune', '--before', '2001-02', '--apply'],
      env,
    );
    expect(report.applied).toBe(true);
    expect(report.months.map((month) => month.month)).toEqual(
      expect.arrayContaining(['2000-12', '2001-01']),
    );
    const { rows } = await db.query(
      "SELECT to_regclass('usage_records_2000_12') AS dec, to_regclass('usage_records_2001_01') AS jan",
    );
    expect(rows[0]).toEqual({ dec: null, jan: null });
    expect(await ledgerBalances(org.org_id)).toEqual(before);
    const archived = await db.query<{ amount: string }>(
      `SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'usage_archived'
        ORDER BY id`,
      [org.org_id],
    );
    // One per month, each in its month's transaction, December first.
    expect(archived.rows).toEqual([{ amount: '-0.500000000000' }, { amount: '-3.750000001000' }]);
    // The months left the running totals; the rollups keep them, monthly and daily alike.
    const totals = await db.query(
      `SELECT month FROM usage_wallet_totals WHERE org_id = $1 AND month < '2001-02-01'`,
      [org.org_id],
    );
    expect(totals.rows).toEqual([]);
    expect(await productUserMonths(org.org_id)).toEqual(rollupsBefore);
  });

  it('refuses to drop the current or previous month, and a cutoff that is not a month', async () => {
    const now = new Date();
    const thisMonth = now.toISOString().slice(0, 7);
    const refused = await runCli(['usage', 'prune', '--before', thisMonth, '--apply'], env);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr).error.message).toContain(
      'would drop the current or previous month',
    );
    const bad = await runCli(['usage', 'prune', '--before', '2001-13'], env);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr).error.message).toBe('--before must be a month, YYYY-MM');
  });
});
