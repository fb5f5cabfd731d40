// The day range of a usage query: `from` and `to` as dates (YYYY-MM-DD) or RFC 3339 timestamps
// at a UTC midnight (the rollups are daily, so a finer bound could not be answered exactly).
// `to` is exclusive; the range is at most MAX_USAGE_RANGE_DAYS long.
import { gwError, type GwError } from '../../errors.js';

export const MAX_USAGE_RANGE_DAYS = 366;
export const DEFAULT_USAGE_RANGE_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export interface DayRange {
  readonly from: Date;
  readonly to: Date;
}

function parseDay(name: string, text: string): Date | GwError {
  const value = DATE.test(text) ? `${text}T00:00:00Z` : text;
  const date = new Date(value);
  if ((!DATE.test(text) && !RFC3339.test(text)) || Number.isNaN(date.getTime())) {
    return gwError(
      'gw_invalid_request',
      `${name}: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp`,
    );
  }
  if (DATE.test(text) && date.toISOString().slice(0, 10) !== text) {
    return gwError('gw_invalid_request', `${name}: ${text} is not a calendar date`);
  }
  if (date.getTime() % DAY_MS !== 0) {
    return gwError(
      'gw_invalid_request',
      `${name}: usage is kept per UTC day; give a date or a timestamp at 00:00 UTC`,
    );
  }
  return date;
}

/** The range asked for; without `to`, up to the end of today (UTC); without `from`, 30 days before `to`. */
export function parseDayRange(
  fromText: string | undefined,
  toText: string | undefined,
  now = new Date(),
): DayRange | GwError {
  const to =
    toText === undefined
      ? new Date(Math.floor(now.getTime() / DAY_MS + 1) * DAY_MS)
      : parseDay('to', toText);
  if ('code' in to) return to;
  const from =
    fromText === undefined
      ? new Date(to.getTime() - DEFAULT_USAGE_RANGE_DAYS * DAY_MS)
      : parseDay('from', fromText);
  if ('code' in from) return from;
  if (from.getTime() >= to.getTime()) {
    return gwError('gw_invalid_request', 'from: must be before to');
  }
  if (to.getTime() - from.getTime() > MAX_USAGE_RANGE_DAYS * DAY_MS) {
    return gwError(
      'gw_invalid_request',
      `to: the range may span at most ${MAX_USAGE_RANGE_DAYS} days`,
    );
  }
  return { from, to };
}
