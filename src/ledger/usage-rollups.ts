// Daily usage rollups: what the dashboard plots read instead of scanning the ledger. The usage
// sink feeds them the rows its INSERT actually inserted (RETURNING), in the same statement and
// transaction, so a replayed stream entry (ON CONFLICT DO NOTHING) is never counted twice.
import type { DbPool } from '../db/pool.js';
import { formatNano, numericToNano } from '../money.js';

/** The columns the usage_records INSERT must return for the rollup (see withDailyRollup). */
export const ROLLUP_RETURNING =
  'RETURNING org_id, created_at, model, app_connection_id, product_user_id, currency, input_tokens, output_tokens, total_tokens, sell_cost, wallet_cost';

/**
 * Wraps an `INSERT INTO usage_records … ON CONFLICT DO NOTHING` into one statement that also
 * upserts the daily rollups of the inserted rows. Keys are upserted in a fixed order so two
 * writers' transactions cannot deadlock on each other's rollup rows.
 */
export function withDailyRollup(insertRecordsSql: string): string {
  return `WITH inserted AS (${insertRecordsSql} ${ROLLUP_RETURNING})
    INSERT INTO usage_rollups_daily AS r (org_id, day, model, app_connection_id, product_user_id,
      currency, requests, input_tokens, output_tokens, total_tokens, sell_cost, wallet_cost)
    SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, model, app_connection_id,
           COALESCE(product_user_id, ''), currency, count(*), sum(input_tokens),
           sum(output_tokens), sum(total_tokens), sum(sell_cost), sum(wallet_cost)
      FROM inserted
     GROUP BY 1, 2, 3, 4, 5, 6
     ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (org_id, day, model, app_connection_id, product_user_id, currency) DO UPDATE SET
      requests = r.requests + EXCLUDED.requests,
      input_tokens = r.input_tokens + EXCLUDED.input_tokens,
      output_tokens = r.output_tokens + EXCLUDED.output_tokens,
      total_tokens = r.total_tokens + EXCLUDED.total_tokens,
      sell_cost = r.sell_cost + EXCLUDED.sell_cost,
      wallet_cost = r.wallet_cost + EXCLUDED.wallet_cost`;
}

export const USAGE_GROUPS = ['day', 'model', 'connection', 'product_user'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** The rollup column each grouping reads (a fixed name, never input). */
const GROUP_COLUMN: Readonly<Record<UsageGroup, string>> = {
  day: "to_char(day, 'YYYY-MM-DD')",
  model: 'model',
  connection: 'app_connection_id',
  product_user: "NULLIF(product_user_id, '')",
};

export interface UsageRollupQuery {
  readonly orgId: string;
  readonly groupBy: UsageGroup;
  /** First UTC day included. */
  readonly from: Date;
  /** First UTC day not included. */
  readonly to: Date;
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

/** The organization's usage between two UTC days, one row per group and currency. */
export async function readUsageRollups(
  db: Pick<DbPool, 'query'>,
  query: UsageRollupQuery,
): Promise<UsageRollupRow[]> {
  const key = GROUP_COLUMN[query.groupBy];
  const { rows } = await db.query<{
    key: string | null;
    currency: string;
    requests: string;
    input_tokens: string;
    output_tokens: string;
    total_tokens: string;
    sell_cost: string;
    wallet_cost: string;
  }>(
    `SELECT ${key} AS key, currency, sum(requests)::text AS requests,
            sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens,
            sum(total_tokens)::text AS total_tokens, sum(sell_cost)::text AS sell_cost,
            sum(wallet_cost)::text AS wallet_cost
       FROM usage_rollups_daily
      WHERE org_id = $1 AND day >= $2::date AND day < $3::date
      GROUP BY 1, 2
      ORDER BY 1 NULLS LAST, 2`,
    [query.orgId, isoDay(query.from), isoDay(query.to)],
  );
  return rows.map((row) => ({
    key: row.key,
    currency: row.currency.trim(),
    requests: Number(row.requests),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    total_tokens: Number(row.total_tokens),
    cost: formatNano(numericToNano(row.sell_cost)),
    wallet_cost: formatNano(numericToNano(row.wallet_cost)),
  }));
}

export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
