// gw usage prune: whole months of usage_records dropped, the wallets' ledger balances kept to
// the nano-unit through 'usage_archived' transactions, recent months refused. Uses a month of
// 2001 that no other test writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { runCli, runCliJson, seed, type SeededOrg } from './support/processes.js';

const { env, db } = isolatedContext('retention');
let org: SeededOrg;

async function ledgerBalance(orgId: string): Promise<string> {
  const { rows } = await db.query<{ balance: string }>(
    `SELECT ((SELECT COALESCE(sum(amount), 0) FROM wallet_transactions WHERE org_id = $1)
            - (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1))::text AS balance`,
    [orgId],
  );
  return rows[0]!.balance;
}

beforeAll(async () => {
  org = await seed(env);
  await db.query("SELECT gw_ensure_usage_partition('2001-01-01')");
  for (const [index, cost] of ['1.500000000000', '0.250000000001', '2.000000000000'].entries()) {
    await db.query(
      `INSERT INTO usage_records (request_id, created_at, org_id, app_id, app_connection_id,
         api_key_id, product_user_id, model, vendor, route, stream, status, input_tokens,
         output_tokens, total_tokens, currency, sell_cost, vendor_cost, wallet_cost,
         reserved_amount, latency_ms)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, 'key', NULL, 'vendor_b/gpt-4o-mini', 'vendor_b',
         'system', false, 'completed', 1, 1, 2, 'USD', $5, 0, $5, $5, 1)`,
      [`2001-01-${10 + index}T12:00:00Z`, org.org_id, org.app_id, org.app_connection_id, cost],
    );
  }
});

afterAll(async () => {
  await db.query('DROP TABLE IF EXISTS usage_records_2001_01');
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
    expect(january!.wallet_cost).toBe('3.750000000001');
    const { rows } = await db.query("SELECT to_regclass('usage_records_2001_01') AS t");
    expect(rows[0].t).not.toBeNull();
  });

  it('drops the month with --apply and keeps every wallet balance exact', async () => {
    const before = await ledgerBalance(org.org_id);
    const report = await runCliJson<PruneReport>(
      ['usage', 'prune', '--before', '2001-02', '--apply'],
      env,
    );
    expect(report.applied).toBe(true);
    expect(report.months.map((month) => month.month)).toContain('2001-01');
    const { rows } = await db.query("SELECT to_regclass('usage_records_2001_01') AS t");
    expect(rows[0].t).toBeNull();
    expect(await ledgerBalance(org.org_id)).toBe(before);
    const archived = await db.query<{ amount: string }>(
      "SELECT amount::text FROM wallet_transactions WHERE org_id = $1 AND kind = 'usage_archived'",
      [org.org_id],
    );
    expect(archived.rows).toEqual([{ amount: '-3.750000000001' }]);
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
