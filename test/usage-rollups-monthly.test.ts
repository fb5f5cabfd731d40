// The dashboard's product-user grouping and the overview's top product users read whole months
// from the monthly product-user rollup (migration 042) and only edge days from the daily one:
// on real rows written by the usage sink, over ranges that start and end mid-month, on a
// month's first day, span a year boundary, lie inside one month, with every way of reading a
// month (read as of several dates), the answer is the one the daily rollup alone gives, to the
// unit and in the same order, limits included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgOverview } from '../src/admin/overview.js';
import { createApp, createOrganization } from '../src/admin/provisioning.js';
import { createDbPool } from '../src/db/pool.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import {
  readUsageRollups,
  usageRollupRow,
  type RollupSumsText,
} from '../src/ledger/usage-rollups.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { usageRecord } from './support/records.js';

const db = createDbPool(TEST_DATABASE_URL, 4);
const DAY_MS = 24 * 3600 * 1000;
const day = (text: string): Date => new Date(`${text}T00:00:00Z`);
let orgId: string;
let users: string[];

afterAll(async () => {
  await db.end();
});

beforeAll(async () => {
  orgId = await createOrganization(db, 'monthly rollups');
  const appId = await createApp(db, orgId, 'app');
  users = Array.from({ length: 9 }, (_, n) => `pu_monthly_${orgId}_${n}`);
  for (const [n, id] of users.entries()) {
    await db.query(
      `INSERT INTO product_users (id, org_id, app_id, external_user_id, display_name)
       VALUES ($1, $2, $3, $4, $5)`,
      [id, orgId, appId, `ext-${n}`, `User ${n}`],
    );
  }
  // 2025-11-20 … 2026-02-10 (a year boundary), every few hours: users with skewed, non-round
  // costs, a few requests with no product user, a second currency, and the same cost for two
  // users on purpose (ties are broken by key).
  const records = [];
  for (let at = day('2025-11-20').getTime(); at < day('2026-02-10').getTime(); at += 7 * 3600_000) {
    const n = Math.floor(at / 3600_000);
    const user = n % 11 === 0 ? null : users[(n * n) % users.length]!;
    const cost = BigInt(1 + ((n * 7919) % 1_000_003)) * (user === users[0] ? 5n : 1n);
    records.push(
      usageRecord(orgId, user === users[2] || user === users[3] ? 777n : cost, {
        createdAt: new Date(at),
        productUserId: user,
        currency: n % 13 === 0 ? 'EUR' : 'USD',
        inputTokens: n % 97,
        outputTokens: n % 31,
        cacheWriteTokens: n % 29,
        cacheWrite1hTokens: n % 7,
        cacheReadTokens: n % 37,
        webSearchRequests: n % 3,
        walletCostNano: cost / 3n,
      }),
    );
  }
  const sink = new PostgresUsageSink(db);
  for (let i = 0; i < records.length; i += 50) await sink.write(records.slice(i, i + 50));
  await sink.write(records.slice(0, 20)); // replayed: counted once
});

/** The grouping as it read the daily rollup alone, before the monthly one. */
async function fromDailyRows(from: Date, to: Date, limit: number) {
  const { rows } = await db.query<RollupSumsText & { key: string | null; currency: string }>(
    `SELECT NULLIF(product_user_id, '') AS key, currency, sum(requests)::text AS requests,
            sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens,
            sum(total_tokens)::text AS total_tokens,
            sum(cache_write_tokens)::text AS cache_write_tokens,
            sum(cache_write_1h_tokens)::text AS cache_write_1h_tokens,
            sum(cache_read_tokens)::text AS cache_read_tokens,
            sum(web_search_requests)::text AS web_search_requests,
            sum(sell_cost_nano)::text AS sell_cost, sum(wallet_cost_nano)::text AS wallet_cost
       FROM usage_rollups_daily_product_users
      WHERE org_id = $1 AND day >= $2::date AND day < $3::date
      GROUP BY 1, 2 ORDER BY sum(sell_cost_nano) DESC, 1 NULLS LAST, 2 LIMIT $4`,
    [orgId, from.toISOString().slice(0, 10), to.toISOString().slice(0, 10), limit],
  );
  return rows.map(usageRollupRow);
}

describe('product-user usage from the monthly rollup', () => {
  it('answers every range as the daily rollup does, however each month is read', async () => {
    const ranges: Array<[string, string]> = [
      ['2025-11-20', '2026-02-11'], // the whole ledger: edges and whole months
      ['2025-12-01', '2026-02-01'], // whole months only, across the year boundary
      ['2025-12-15', '2026-01-17'], // mid-month to mid-month across the year boundary
      ['2025-11-22', '2025-11-29'], // inside one month
      ['2026-01-02', '2026-01-31'], // most of one month: the month less two days
      ['2025-12-31', '2026-01-01'], // one day, the year's last
      ['2026-02-01', '2026-02-10'], // a month whose later days are "the future" below
      ['2025-11-01', '2026-03-01'], // months with days before and after the usage
    ];
    // Read as of several dates: the month edges' cheapest reading changes, the answer not.
    const nows = [new Date('2026-02-09T12:00:00Z'), new Date('2026-06-01T00:00:00Z')];
    let compared = 0;
    for (const [from, to] of ranges) {
      for (const limit of [1000, 3]) {
        const expected = await fromDailyRows(day(from), day(to), limit);
        for (const now of nows) {
          const rows = await readUsageRollups(db, {
            orgId,
            groupBy: 'product_user',
            from: day(from),
            to: day(to),
            limit,
            now,
          });
          expect(rows, `${from}..${to} limit ${limit} at ${now.toISOString()}`).toEqual(expected);
          compared += rows.length;
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
    // A range with no usage answers nothing (no zero rows from months less their days).
    const empty = await readUsageRollups(db, {
      orgId,
      groupBy: 'product_user',
      from: day('2026-02-11'),
      to: day('2026-02-28'),
      limit: 100,
      now: new Date('2026-06-01T00:00:00Z'),
    });
    expect(empty).toEqual([]);
  });

  it("ranks the overview's top product users of a month as the daily rollup does", async () => {
    for (const month of ['2025-12', '2026-01', '2026-02']) {
      const now = new Date(day(`${month}-01`).getTime() + 9 * DAY_MS);
      const overview = await orgOverview(
        db,
        { liveBalance: () => Promise.resolve({ balanceNano: 0n, reservedNano: 0n }) },
        orgId,
        now,
      );
      const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
      const top = (await fromDailyRows(day(`${month}-01`), next, 1000))
        .filter((row) => row.key !== null && row.currency === 'USD')
        .slice(0, 5);
      expect(
        overview.top_product_users.map((user) => [
          user.product_end_user_id,
          user.requests,
          user.cost,
        ]),
        month,
      ).toEqual(top.map((row) => [row.key, row.requests, row.cost]));
      expect(overview.top_product_users[0]).toMatchObject({
        external_user_id: `ext-${users.indexOf(overview.top_product_users[0]!.product_end_user_id)}`,
      });
    }
  });
});
