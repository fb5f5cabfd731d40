// Daily usage rollups: what the dashboard plots read instead of scanning the ledger. The usage
// sink feeds them the rows its INSERT actually inserted (RETURNING), in the same statement and
// transaction, so a replayed stream entry (ON CONFLICT DO NOTHING) is never counted twice.
import type { DbPool } from '../db/pool.js';
import { formatNano } from '../money.js';

/** The columns the usage_records INSERT must return for the rollup (see withDailyRollup). */
export const ROLLUP_RETURNING =
  'RETURNING org_id, created_at, model, app_connection_id, product_user_id, currency, input_tokens, output_tokens, total_tokens, sell_cost, wallet_cost';

// Costs are kept in nano-units (bigint): summing them is exact and much faster than numeric.
const SUMS = `count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens),
  sum((sell_cost * 1000000000)::bigint), sum((wallet_cost * 1000000000)::bigint)`;
const SUM_COLUMNS =
  'requests, input_tokens, output_tokens, total_tokens, sell_cost_nano, wallet_cost_nano';
const ADD_EXCLUDED = `requests = r.requests + EXCLUDED.requests,
  input_tokens = r.input_tokens + EXCLUDED.input_tokens,
  output_tokens = r.output_tokens + EXCLUDED.output_tokens,
  total_tokens = r.total_tokens + EXCLUDED.total_tokens,
  sell_cost_nano = r.sell_cost_nano + EXCLUDED.sell_cost_nano,
  wallet_cost_nano = r.wallet_cost_nano + EXCLUDED.wallet_cost_nano`;

/**
 * Wraps an `INSERT INTO usage_records … ON CONFLICT DO NOTHING` into one statement that also
 * upserts both daily rollups of the inserted rows. Keys are upserted in a fixed order so two
 * writers' transactions cannot deadlock on each other's rollup rows.
 */
export function withDailyRollup(insertRecordsSql: string): string {
  return `WITH inserted AS (${insertRecordsSql} ${ROLLUP_RETURNING}),
    by_model AS (
      INSERT INTO usage_rollups_daily AS r (org_id, day, model, app_connection_id, currency,
        ${SUM_COLUMNS})
      SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, model, app_connection_id, currency,
             ${SUMS}
        FROM inserted GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, day, model, app_connection_id, currency) DO UPDATE SET ${ADD_EXCLUDED})
    INSERT INTO usage_rollups_daily_product_users AS r (org_id, day, product_user_id, currency,
      ${SUM_COLUMNS})
    SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, COALESCE(product_user_id, ''), currency,
           ${SUMS}
      FROM inserted GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (org_id, day, product_user_id, currency) DO UPDATE SET ${ADD_EXCLUDED}`;
}

export const USAGE_GROUPS = ['day', 'model', 'connection', 'product_user'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/**
 * The rollup table and column each grouping reads (fixed names, never input). Product users
 * are many: they come biggest cost first, the top `limit`; the others in key order.
 */
const GROUPING: Readonly<Record<UsageGroup, { table: string; column: string; order: string }>> = {
  day: { table: 'usage_rollups_daily', column: "to_char(day, 'YYYY-MM-DD')", order: '1, 2' },
  model: { table: 'usage_rollups_daily', column: 'model', order: '1, 2' },
  connection: { table: 'usage_rollups_daily', column: 'app_connection_id', order: '1, 2' },
  product_user: {
    table: 'usage_rollups_daily_product_users',
    column: "NULLIF(product_user_id, '')",
    order: 'sum(sell_cost_nano) DESC, 1 NULLS LAST, 2',
  },
};

export interface UsageRollupQuery {
  readonly orgId: string;
  readonly groupBy: UsageGroup;
  /** First UTC day included. */
  readonly from: Date;
  /** First UTC day not included. */
  readonly to: Date;
  /** At most this many rows (the product-user grouping's top spenders). */
  readonly limit: number;
}

export interface UsageRollupRow {
  /** The day (YYYY-MM-DD), model, connection id or product user id (null: no product user). */
  readonly key: string | null;
  readonly currency: string;
  readonly requests: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  /** What the requests cost against caps and allowances (sell price), 12-digit string. */
  readonly cost: string;
  /** What was taken from the organization's wallet, 12-digit string. */
  readonly wallet_cost: string;
}

/** Summed rollup columns as Postgres answers them (bigint and numeric sums as text). */
export interface RollupSumsText {
  requests: string;
  input_tokens: string;
  output_tokens: string;
  total_tokens: string;
  sell_cost: string;
  wallet_cost: string;
}

/** The organization's usage between two UTC days, one row per group and currency. */
export async function readUsageRollups(
  db: Pick<DbPool, 'query'>,
  query: UsageRollupQuery,
): Promise<UsageRollupRow[]> {
  const { table, column, order } = GROUPING[query.groupBy];
  const { rows } = await db.query<RollupSumsText & { key: string | null; currency: string }>(
    `SELECT ${column} AS key, currency, sum(requests)::text AS requests,
            sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens,
            sum(total_tokens)::text AS total_tokens, sum(sell_cost_nano)::text AS sell_cost,
            sum(wallet_cost_nano)::text AS wallet_cost
       FROM ${table}
      WHERE org_id = $1 AND day >= $2::date AND day < $3::date
      GROUP BY 1, 2
      ORDER BY ${order}
      LIMIT $4`,
    [query.orgId, isoDay(query.from), isoDay(query.to), query.limit],
  );
  return rows.map((row) => ({
    key: row.key,
    currency: row.currency.trim(),
    requests: Number(row.requests),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    total_tokens: Number(row.total_tokens),
    cost: formatNano(BigInt(row.sell_cost)),
    wallet_cost: formatNano(BigInt(row.wallet_cost)),
  }));
}

export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
