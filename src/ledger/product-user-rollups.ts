// Product-user usage over a range of UTC days, read from the monthly rollup where it saves rows.
// The daily table holds one row per user and day (305,000 rows for 30 days of a large org); the
// monthly one a row per user and month (migration 042), the exact sum of the month's daily rows.
// So each month the range touches is read as whichever is cheaper of:
//  - its days inside the range, from the daily table (a month's edge of a few days), or
//  - its monthly rows, less its days outside the range from the daily table (a whole month
//    reads nothing else; the current month, only the days after `to` that already happened).
// Every sum is over integers, so the result is the daily table's sum over the range to the
// unit. A group is kept when its requests sum above zero: a rollup row always counts at least
// one request (rows are only ever added to), so that is exactly the groups that have a daily
// row in the range.
import { isoDay } from '../periods.js';
import { ROLLUP_SUMS } from './rollup-sums.js';

const DAY_MS = 24 * 3600 * 1000;
/** What reading a month's rows costs, in days of daily rows (a user active any day of the
 * month is one monthly row; on the measured ledger a month held as many rows as ~3 days). */
const MONTH_COST_DAYS = 3;

/** UTC days [first, end) as YYYY-MM-DD, `end` excluded. */
export interface DayInterval {
  readonly first: string;
  readonly end: string;
}

export interface ProductUserRangePlan {
  /** First days of the months read whole from the monthly rollup. */
  readonly months: string[];
  /** Daily rows added. */
  readonly added: DayInterval[];
  /** Daily rows subtracted: days of a month in `months` that are outside the range. */
  readonly subtracted: DayInterval[];
}

/** Days of [from, to) that can hold usage at `now` (none after today). */
function pastDays(from: number, to: number, now: Date): number {
  const endOfToday = (Math.floor(now.getTime() / DAY_MS) + 1) * DAY_MS;
  return Math.max(0, Math.min(to, endOfToday) - from) / DAY_MS;
}

/** How to read the UTC days [from, to) (midnights): which months whole, which days added or taken off. */
export function planProductUserRange(from: Date, to: Date, now = new Date()): ProductUserRangePlan {
  const plan: ProductUserRangePlan = { months: [], added: [], subtracted: [] };
  const interval = (first: number, end: number): DayInterval => ({
    first: isoDay(new Date(first)),
    end: isoDay(new Date(end)),
  });
  let monthStart = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), 1);
  while (monthStart < to.getTime()) {
    const start = new Date(monthStart);
    const monthEnd = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
    const first = Math.max(from.getTime(), monthStart);
    const end = Math.min(to.getTime(), monthEnd);
    const inside = pastDays(first, end, now);
    const outside = pastDays(monthStart, first, now) + pastDays(end, monthEnd, now);
    if (first === monthStart && end === monthEnd) {
      plan.months.push(isoDay(new Date(monthStart)));
    } else if (outside + MONTH_COST_DAYS < inside) {
      plan.months.push(isoDay(new Date(monthStart)));
      if (first > monthStart) plan.subtracted.push(interval(monthStart, first));
      if (end < monthEnd) plan.subtracted.push(interval(end, monthEnd));
    } else {
      plan.added.push(interval(first, end));
    }
    monthStart = monthEnd;
  }
  return plan;
}

/** What keeps exactly the groups that have a daily row in the range (see above). */
export const PRODUCT_USER_HAVING = 'HAVING sum(requests) > 0';

/**
 * A FROM item of the organization's product-user rollup rows over the range: columns
 * product_user_id ('' for none), currency, requests, input_tokens, output_tokens, total_tokens,
 * sell_cost_nano, wallet_cost_nano, the cache parts and web_search_requests (ROLLUP_SUMS).
 * Summed per group (with PRODUCT_USER_HAVING), they are the daily table's sums over [from, to). Its parameters are numbered from `firstParam`. One branch
 * per part of the plan, each with its own bounds, so each is an index range scan (a join on a
 * list of intervals is planned as a scan of the whole daily table).
 */
export function productUserRollupSource(
  orgId: string,
  range: { readonly from: Date; readonly to: Date },
  firstParam: number,
  now = new Date(),
): { sql: string; params: unknown[] } {
  const plan = planProductUserRange(range.from, range.to, now);
  const params: unknown[] = [orgId];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${firstParam + params.length - 1}`;
  };
  const org = `$${firstParam}`;
  const branches: string[] = [];
  if (plan.months.length > 0) {
    branches.push(`SELECT product_user_id, currency, ${ROLLUP_SUMS.join(', ')}
       FROM usage_rollups_monthly_product_users
      WHERE org_id = ${org} AND month = ANY(${param(plan.months)}::date[])`);
  }
  const days = (interval: DayInterval, sign: '' | '-'): string =>
    `SELECT product_user_id, currency, ${ROLLUP_SUMS.map((name) => `${sign}${name} AS ${name}`).join(', ')}
       FROM usage_rollups_daily_product_users
      WHERE org_id = ${org} AND day >= ${param(interval.first)}::date
        AND day < ${param(interval.end)}::date`;
  for (const interval of plan.added) branches.push(days(interval, ''));
  for (const interval of plan.subtracted) branches.push(days(interval, '-'));
  return { sql: `(${branches.join('\n      UNION ALL ')}) AS rollup`, params };
}
