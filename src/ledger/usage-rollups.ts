// Usage rollups: what the dashboard plots read instead of scanning the ledger, and the wallets'
// running totals. The usage sink feeds them the rows its INSERT actually inserted (RETURNING),
// in the same statement and transaction, so a replayed stream entry (ON CONFLICT DO NOTHING)
// is never counted twice.
import { withTransaction, type DbPool } from '../db/pool.js';
import { formatNano } from '../money.js';
import { isoDay } from '../periods.js';
import { PRODUCT_USER_HAVING, productUserRollupSource } from './product-user-rollups.js';
import { ROLLUP_SUMS } from './rollup-sums.js';

/** The columns the usage_records INSERT must return for the rollups (see withRollups). */
export const ROLLUP_RETURNING =
  'RETURNING org_id, created_at, model, app_connection_id, product_user_id, currency, input_tokens, output_tokens, total_tokens, sell_cost, wallet_cost, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, web_search_requests';

// Costs are kept in nano-units (bigint): summing them is exact and much faster than numeric.
// The prompt's cache parts and the web searches (migration 051) are summed like the tokens.
// One sum per column of ROLLUP_SUMS, in its order.
const SUMS = `count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens),
  sum((sell_cost * 1000000000)::bigint), sum((wallet_cost * 1000000000)::bigint),
  sum(cache_write_tokens), sum(cache_write_1h_tokens), sum(cache_read_tokens),
  sum(web_search_requests)`;
const SUM_COLUMNS = ROLLUP_SUMS.join(', ');
const ADD_EXCLUDED = ROLLUP_SUMS.map(
  (column) => `${column} = r.${column} + EXCLUDED.${column}`,
).join(',\n  ');
const UTC_DAY = "(created_at AT TIME ZONE 'UTC')::date";
const UTC_MONTH = "date_trunc('month', created_at AT TIME ZONE 'UTC')::date";

/**
 * Wraps an `INSERT INTO usage_records … ON CONFLICT DO NOTHING` into one statement that also
 * upserts, from the inserted rows, both daily rollups (migration 014), the monthly
 * product-user rollup (042) and the wallets' running totals (041). Keys are upserted in a
 * fixed order so two writers' transactions cannot deadlock on each other's rows.
 */
export function withRollups(insertRecordsSql: string): string {
  return `WITH inserted AS (${insertRecordsSql} ${ROLLUP_RETURNING}),
    by_model AS (
      INSERT INTO usage_rollups_daily AS r (org_id, day, model, app_connection_id, currency,
        ${SUM_COLUMNS})
      SELECT org_id, ${UTC_DAY}, model, app_connection_id, currency, ${SUMS}
        FROM inserted GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (org_id, day, model, app_connection_id, currency) DO UPDATE SET ${ADD_EXCLUDED}),
    by_user_day AS (
      INSERT INTO usage_rollups_daily_product_users AS r (org_id, day, product_user_id, currency,
        ${SUM_COLUMNS})
      SELECT org_id, ${UTC_DAY}, COALESCE(product_user_id, ''), currency, ${SUMS}
        FROM inserted GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
      ON CONFLICT (org_id, day, product_user_id, currency) DO UPDATE SET ${ADD_EXCLUDED}),
    by_user_month AS (
      INSERT INTO usage_rollups_monthly_product_users AS r (org_id, month, product_user_id,
        currency, ${SUM_COLUMNS})
      SELECT org_id, ${UTC_MONTH}, COALESCE(product_user_id, ''), currency, ${SUMS}
        FROM inserted GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
      ON CONFLICT (org_id, month, product_user_id, currency) DO UPDATE SET ${ADD_EXCLUDED})
    INSERT INTO usage_wallet_totals AS t (org_id, month, records, wallet_cost)
    SELECT org_id, ${UTC_MONTH}, count(*), sum(wallet_cost)
      FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (org_id, month) DO UPDATE
      SET records = t.records + EXCLUDED.records, wallet_cost = t.wallet_cost + EXCLUDED.wallet_cost`;
}

export const USAGE_GROUPS = ['day', 'model', 'connection', 'product_user'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** The rows a grouping sums: a FROM item and its parameters (numbered from $2), and the HAVING. */
interface RollupSource {
  readonly sql: string;
  readonly params: unknown[];
  readonly having: string;
}

const dailyRollup =
  (table: string) =>
  (query: UsageRollupQuery): RollupSource => ({
    sql: `${table} WHERE org_id = $2 AND day >= $3::date AND day < $4::date`,
    params: [query.orgId, isoDay(query.from), isoDay(query.to)],
    having: '',
  });

/**
 * The rows and column each grouping reads (fixed names, never input). Product users are many:
 * whole months of them come from their monthly rollup (product-user-rollups.ts); they come
 * biggest cost first, the top `limit`; the others in key order.
 */
const GROUPING: Readonly<
  Record<
    UsageGroup,
    { source: (query: UsageRollupQuery) => RollupSource; column: string; order: string }
  >
> = {
  day: {
    source: dailyRollup('usage_rollups_daily'),
    column: "to_char(day, 'YYYY-MM-DD')",
    order: '1, 2',
  },
  model: { source: dailyRollup('usage_rollups_daily'), column: 'model', order: '1, 2' },
  connection: {
    source: dailyRollup('usage_rollups_daily'),
    column: 'app_connection_id',
    order: '1, 2',
  },
  product_user: {
    source: (query) => ({
      ...productUserRollupSource(query.orgId, query, 2, query.now),
      having: PRODUCT_USER_HAVING,
    }),
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
  /** Which days can hold usage yet, for the cheapest reading; never changes the answer. */
  readonly now?: Date;
}

export interface UsageRollupRow {
  /** The day (YYYY-MM-DD), model, connection id or product user id (null: no product user). */
  readonly key: string | null;
  readonly currency: string;
  readonly requests: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  /** Of input_tokens, those the prompt cache wrote (all of them), wrote for an hour, and read. */
  readonly cache_write_tokens: number;
  readonly cache_write_1h_tokens: number;
  readonly cache_read_tokens: number;
  /** The searches the vendor's web search tool made. */
  readonly web_search_requests: number;
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
  cache_write_tokens: string;
  cache_write_1h_tokens: string;
  cache_read_tokens: string;
  web_search_requests: string;
  sell_cost: string;
  wallet_cost: string;
}

/** The organization's usage between two UTC days, one row per group and currency. */
export async function readUsageRollups(
  db: Pick<DbPool, 'query'>,
  query: UsageRollupQuery,
): Promise<UsageRollupRow[]> {
  const { source: sourceOf, column, order } = GROUPING[query.groupBy];
  const source = sourceOf(query);
  const { rows } = await db.query<RollupSumsText & { key: string | null; currency: string }>(
    `SELECT ${column} AS key, currency, sum(requests)::text AS requests,
            sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens,
            sum(total_tokens)::text AS total_tokens,
            sum(cache_write_tokens)::text AS cache_write_tokens,
            sum(cache_write_1h_tokens)::text AS cache_write_1h_tokens,
            sum(cache_read_tokens)::text AS cache_read_tokens,
            sum(web_search_requests)::text AS web_search_requests,
            sum(sell_cost_nano)::text AS sell_cost,
            sum(wallet_cost_nano)::text AS wallet_cost
       FROM ${source.sql}
      GROUP BY 1, 2 ${source.having}
      ORDER BY ${order}
      LIMIT $1`,
    [query.limit, ...source.params],
  );
  return rows.map(usageRollupRow);
}

/** One group's sums as Postgres answers them, as the API gives them. */
export function usageRollupRow(
  row: RollupSumsText & { key: string | null; currency: string },
): UsageRollupRow {
  return {
    key: row.key,
    currency: row.currency.trim(),
    requests: Number(row.requests),
    input_tokens: Number(row.input_tokens),
    output_tokens: Number(row.output_tokens),
    total_tokens: Number(row.total_tokens),
    cache_write_tokens: Number(row.cache_write_tokens),
    cache_write_1h_tokens: Number(row.cache_write_1h_tokens),
    cache_read_tokens: Number(row.cache_read_tokens),
    web_search_requests: Number(row.web_search_requests),
    cost: formatNano(BigInt(row.sell_cost)),
    wallet_cost: formatNano(BigInt(row.wallet_cost)),
  };
}

/** How many rows the running totals hold after a rebuild. */
export interface RebuiltTotals {
  readonly wallet_total_rows: number;
  readonly product_user_month_rows: number;
}

/**
 * Computes the wallets' running totals again from usage_records, the monthly product-user
 * rollup from the daily one, and the rollups' cache parts and searches from the records that
 * have any (the functions migrations 041, 042 and 051 built them with), in one
 * transaction that holds the ledger's writes meanwhile: for rows something other than this
 * version's writer put there (an instance of an older version still running during a rollout).
 */
export async function rebuildRunningTotals(db: DbPool): Promise<RebuiltTotals> {
  return withTransaction(db, async (client) => {
    await client.query('SELECT gw_rebuild_usage_wallet_totals()');
    await client.query('SELECT gw_rebuild_usage_rollups_monthly_product_users()');
    await client.query('SELECT gw_rebuild_usage_rollups_cache_parts()');
    const { rows } = await client.query<{ wallets: string; users: string }>(
      `SELECT (SELECT count(*) FROM usage_wallet_totals)::text AS wallets,
              (SELECT count(*) FROM usage_rollups_monthly_product_users)::text AS users`,
    );
    return {
      wallet_total_rows: Number(rows[0]!.wallets),
      product_user_month_rows: Number(rows[0]!.users),
    };
  });
}
