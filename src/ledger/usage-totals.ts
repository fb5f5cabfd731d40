// Usage totals from the ledger (this calendar month and all time) for one API key or one
// product user, in the spec's usage shape: decimals as 12-digit strings, counts as integers.
import { monthlyPeriod } from '../periods.js';
import type { DbPool } from '../db/pool.js';
import { formatNano, numericToNano } from '../money.js';

export interface UsageTotals {
  sell_cost: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  request_count: number;
}

interface TotalsRow {
  scope: 'this_month' | 'total';
  sell_cost: string;
  input_tokens: string;
  output_tokens: string;
  request_count: string;
}

export async function usageTotals(
  db: DbPool,
  owner: 'api_key_id' | 'product_user_id',
  id: string,
  now = new Date(),
): Promise<{ this_month: UsageTotals; total: UsageTotals }> {
  const { rows } = await db.query<TotalsRow>(
    `SELECT 'this_month' AS scope, COALESCE(sum(sell_cost), 0)::text AS sell_cost,
            COALESCE(sum(input_tokens), 0)::text AS input_tokens,
            COALESCE(sum(output_tokens), 0)::text AS output_tokens, count(*)::text AS request_count
       FROM usage_records WHERE ${owner} = $1 AND created_at >= $2
     UNION ALL
     SELECT 'total', COALESCE(sum(sell_cost), 0)::text, COALESCE(sum(input_tokens), 0)::text,
            COALESCE(sum(output_tokens), 0)::text, count(*)::text
       FROM usage_records WHERE ${owner} = $1`,
    [id, monthlyPeriod(now, null).start],
  );
  const totals = (scope: TotalsRow['scope']): UsageTotals => {
    const row = rows.find((candidate) => candidate.scope === scope)!;
    const input = Number(row.input_tokens);
    const output = Number(row.output_tokens);
    return {
      sell_cost: formatNano(numericToNano(row.sell_cost)),
      input_tokens: input,
      output_tokens: output,
      total_tokens: input + output,
      request_count: Number(row.request_count),
    };
  };
  return { this_month: totals('this_month'), total: totals('total') };
}
