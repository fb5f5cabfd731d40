// An organization's usage per day, model, connection or product user between two UTC days: what
// the dashboard API's usage route and `gw usage show` answer (decision 487), from the rollups
// the usage writer keeps (src/ledger/usage-rollups.ts), never a scan of the ledger. Rows grouped
// by product user also say whose user it is, the app's own id (decision 592).
import { z } from 'zod';
import type { DbPool } from '../db/pool.js';
import { isGwError, type GwError } from '../errors.js';
import {
  readUsageRollups,
  USAGE_GROUPS,
  type UsageGroup,
  type UsageRollupRow,
} from '../ledger/usage-rollups.js';
import { isoDay } from '../periods.js';
import { wholeNumberOr } from '../written-numbers.js';
import { parseDayRange, type DayRange, type RangeNames } from './usage-range.js';

/** Days, models and connections are few; product users come top spenders first, this many. */
const DEFAULT_USAGE_GROUPS = 100;
const MAX_USAGE_GROUPS = 1000;

/** What a usage summary is asked with: the route's query parameters, the CLI's flags. */
export const usageQuery = z.object({
  group_by: z.enum(USAGE_GROUPS).default('day'),
  from: z.string().optional(),
  to: z.string().optional(),
  limit: wholeNumberOr(DEFAULT_USAGE_GROUPS, { min: 1, max: MAX_USAGE_GROUPS }),
});

export interface UsageRequest extends DayRange {
  readonly groupBy: UsageGroup;
  readonly limit: number;
}

/**
 * A row grouped by product user (only those) also names the user as the app knows it: its
 * `external_user_id` and `app_id` (an external id is unique within its app). Both null for the
 * row of requests with no product user, and for a user no longer on record (the rollups keep
 * what it spent; its records went with it).
 */
export type UsageRow = UsageRollupRow & {
  readonly external_user_id?: string | null;
  readonly app_id?: string | null;
};

export interface UsageSummary {
  group_by: UsageGroup;
  from: string;
  to: string;
  data: UsageRow[];
}

/** The summary a parsed query asks for, or the refusal of its range (naming it by `names`). */
export function usageRequest(
  query: z.infer<typeof usageQuery>,
  names?: RangeNames,
  now = new Date(),
): UsageRequest | GwError {
  const range = parseDayRange(query.from, query.to, now, names);
  if (isGwError(range)) return range;
  // A year of days is 366 rows: the limit bounds the product users, never the days.
  const limit = query.group_by === 'day' ? MAX_USAGE_GROUPS : query.limit;
  return { ...range, groupBy: query.group_by, limit };
}

export async function usageSummary(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  request: UsageRequest,
): Promise<UsageSummary> {
  const rows = await readUsageRollups(db, { orgId, ...request });
  return {
    group_by: request.groupBy,
    from: isoDay(request.from),
    to: isoDay(request.to),
    data: request.groupBy === 'product_user' ? await namedUsers(db, orgId, rows) : rows,
  };
}

/** Product-user rows with whose each is: one lookup for the page, of this org's users only. */
async function namedUsers(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  rows: UsageRollupRow[],
): Promise<UsageRow[]> {
  const ids = rows.flatMap((row) => (row.key === null ? [] : [row.key]));
  const { rows: users } =
    ids.length === 0
      ? { rows: [] }
      : await db.query<{ id: string; external_user_id: string; app_id: string }>(
          `SELECT id, external_user_id, app_id FROM product_users
            WHERE org_id = $1 AND id = ANY($2::text[])`,
          [orgId, ids],
        );
  const byId = new Map(users.map((user) => [user.id, user]));
  return rows.map((row) => {
    const user = row.key === null ? undefined : byId.get(row.key);
    return {
      ...row,
      external_user_id: user?.external_user_id ?? null,
      app_id: user?.app_id ?? null,
    };
  });
}
