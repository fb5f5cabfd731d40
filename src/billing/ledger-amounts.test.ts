// ledgerAmounts on the real Postgres: one batch mixing every kind of figure, in an order that
// is not the columns', with the same account twice, the wallet twice, one user's two periods,
// records exactly at a period's start and end, and records without a product user, in the
// ledger and not yet in it — each figure is what summing its own account alone gives.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../test/support/env.js';
import { usageRecord } from '../../test/support/records.js';
import { createDbPool, readOnlySnapshot } from '../db/pool.js';
import { PostgresUsageSink } from '../ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import { ledgerAmounts, type LedgerAmount, type SpendColumn } from './ledger-amounts.js';

const db = createDbPool(TEST_DATABASE_URL, 2);
const tag = randomBytes(4).toString('hex');
const orgId = `org_amounts_${tag}`;
const [c1, c2] = [`conn_a_${tag}`, `conn_b_${tag}`];
const [ua, ub] = [`pu_a_${tag}`, `pu_b_${tag}`];

afterAll(async () => {
  await db.end();
});

const at = (text: string): Date => new Date(text);
/** One user's two consecutive periods (anchored mid-month), in the past. */
const p1 = { start: at('2026-08-15T09:30:00.000Z'), end: at('2026-09-15T09:30:00.000Z') };
const p2 = { start: p1.end, end: at('2026-10-15T09:30:00.000Z') };
const ms = (date: Date, delta: number): Date => new Date(date.getTime() + delta);

const rec = (
  cost: bigint,
  createdAt: Date,
  appConnectionId: string,
  productUserId: string | null,
): UsageRecord =>
  usageRecord(orgId, cost, { createdAt, appConnectionId, productUserId, walletCostNano: cost });

const FIELD: Record<SpendColumn, keyof UsageRecord> = {
  org_id: 'orgId',
  app_connection_id: 'appConnectionId',
  product_user_id: 'productUserId',
};

describe('ledgerAmounts', () => {
  it('gives each figure of a mixed batch what its account alone sums to', async () => {
    // Powers of two: a figure that took a record it should not have (or missed one) shows which.
    const ledger = [
      rec(1n, p1.start, c1, ua), // at p1's start: in p1
      rec(2n, p1.end, c1, ua), // at p1's end: in p2, not p1
      rec(4n, ms(p2.end, -1), c2, ua),
      rec(8n, p2.end, c1, ua), // at p2's end: in neither
      rec(16n, ms(p2.start, 5), c1, null),
      rec(32n, ms(p1.start, 7), c2, ub),
    ];
    const unwritten = [
      rec(64n, p2.start, c1, ua),
      rec(128n, p1.start, c2, null),
      rec(256n, ms(p1.end, -1), c2, ua),
      rec(512n, p2.end, c1, ub),
      rec(1024n, ms(p1.start, -1), c1, ua), // just before p1
    ];
    await new PostgresUsageSink(db).write(ledger);

    const spent = (column: SpendColumn, id: string, period: typeof p1): LedgerAmount => ({
      of: 'spent',
      column,
      id,
      period,
    });
    const whole = { start: p1.start, end: p2.end };
    const amounts: LedgerAmount[] = [
      spent('product_user_id', ua, p2),
      { of: 'wallet' },
      spent('app_connection_id', c1, p2),
      spent('product_user_id', ua, p1),
      spent('org_id', orgId, p1),
      { of: 'wallet' },
      spent('product_user_id', ua, p2),
      spent('product_user_id', ub, p1),
      spent('app_connection_id', c2, p1),
      spent('product_user_id', `pu_none_${tag}`, p1),
      spent('org_id', orgId, whole),
      spent('app_connection_id', c1, whole),
    ];
    const figures = await readOnlySnapshot(db, (client) =>
      ledgerAmounts(client, orgId, amounts, unwritten),
    );

    const everything = [...ledger, ...unwritten];
    const expected = amounts.map((amount) =>
      amount.of === 'wallet'
        ? -everything.reduce((total, record) => total + record.walletCostNano, 0n)
        : everything
            .filter(
              (record) =>
                record[FIELD[amount.column]] === amount.id &&
                record.createdAt >= amount.period.start &&
                record.createdAt < amount.period.end,
            )
            .reduce((total, record) => total + record.sellCostNano, 0n),
    );
    expect(figures).toEqual(expected);
    // The same, written out: a wrong reference would not hide a wrong figure.
    expect(figures).toEqual([
      2n + 4n + 64n,
      -2047n,
      2n + 16n + 64n,
      1n + 256n,
      1n + 32n + 128n + 256n,
      -2047n,
      2n + 4n + 64n,
      32n,
      32n + 128n + 256n,
      0n,
      1n + 2n + 4n + 16n + 32n + 64n + 128n + 256n,
      1n + 2n + 16n + 64n,
    ]);
  });
});
