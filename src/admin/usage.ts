// An organization's usage per day, model, connection or product user between two UTC days: what
// the dashboard API's usage route and `gw usage show` answer (decision 487), from the rollups
// the usage writer keeps (src/ledger/usage-rollups.ts), never a scan of the ledger.
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

export interface UsageSummary {
  group_by: UsageGroup;
  from: string;
  to: string;
  data: UsageRollupRow[];
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
  return {
    group_by: request.groupBy,
    from: isoDay(request.from),
    to: isoDay(request.to),
    data: await readUsageRollups(db, { orgId, ...request }),
  };
}
