// Monthly allowance periods. Calendar months (UTC) without an anchor; with an anchor, months
// start at the anchor's day and time of day, clamped to the month's length (an anchor on the
// 31st starts February's period on the 28th/29th). Lua never sees dates: only the period key.

export interface Period {
  readonly start: Date;
  /** Exclusive. */
  readonly end: Date;
  /** Stable name of the period, used in Redis keys: the start as epoch milliseconds. */
  readonly key: string;
}

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** The period start in a given month for an anchor (or the 1st at 00:00 without one). */
function startInMonth(year: number, monthIndex: number, anchor: Date | null): Date {
  // Normalize year/month overflow (monthIndex may be -1 or 12).
  const normalized = new Date(Date.UTC(year, monthIndex, 1));
  const y = normalized.getUTCFullYear();
  const m = normalized.getUTCMonth();
  if (!anchor) return normalized;
  const day = Math.min(anchor.getUTCDate(), daysInMonth(y, m));
  return new Date(
    Date.UTC(
      y,
      m,
      day,
      anchor.getUTCHours(),
      anchor.getUTCMinutes(),
      anchor.getUTCSeconds(),
      anchor.getUTCMilliseconds(),
    ),
  );
}

/**
 * The last calendar month asked for: nearly every call is for it (a request asks two or three
 * times), and building it makes six Dates. Periods are read, never changed.
 */
let lastCalendarMonth: Period | undefined;

/** The monthly period containing `at`. */
export function monthlyPeriod(at: Date, anchor: Date | null): Period {
  if (anchor === null) {
    const time = at.getTime();
    const cached = lastCalendarMonth;
    if (cached && time >= cached.start.getTime() && time < cached.end.getTime()) return cached;
    lastCalendarMonth = periodContaining(at, null);
    return lastCalendarMonth;
  }
  return periodContaining(at, anchor);
}

function periodContaining(at: Date, anchor: Date | null): Period {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  let start = startInMonth(year, month, anchor);
  let end: Date;
  if (start.getTime() > at.getTime()) {
    end = start;
    start = startInMonth(year, month - 1, anchor);
  } else {
    end = startInMonth(year, month + 1, anchor);
  }
  return { start, end, key: String(start.getTime()) };
}

/**
 * The period just before `period`, under the same anchor, from the period alone: a request
 * admitted before a user's period turned holds on that one's account until it settles
 * (docs/charging.md). The anchor's time of day is the start's; its day is the later of the
 * start's and the end's days (an anchor day a short month clamps shows in the next month,
 * and one of any two consecutive months has 31 days); calendar months are the anchor of the
 * 1st at 00:00.
 */
export function periodBefore(period: { readonly start: Date; readonly end: Date }): Period {
  const { start, end } = period;
  const anchor = new Date(
    Date.UTC(
      2000,
      0,
      Math.max(start.getUTCDate(), end.getUTCDate()),
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  );
  const before = startInMonth(start.getUTCFullYear(), start.getUTCMonth() - 1, anchor);
  return { start: before, end: start, key: String(before.getTime()) };
}

/** A UTC day as YYYY-MM-DD (how the rollups' `day` and `month` columns are addressed). */
export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
