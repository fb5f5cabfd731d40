// The day range of a usage query: `from` and `to` as dates (YYYY-MM-DD) or RFC 3339 timestamps
// at a UTC midnight (the rollups are daily, so a finer bound could not be answered exactly).
// `to` is exclusive; the range is at most MAX_USAGE_RANGE_DAYS long, inside FIRST_DAY…LAST_DAY.
import { gwError, type GwError } from '../errors.js';

export const MAX_USAGE_RANGE_DAYS = 366;
export const DEFAULT_USAGE_RANGE_DAYS = 30;
const DAY_MS = 24 * 3600 * 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** RFC 3339 (hours 00–23); its date part is checked against the calendar like a plain date. */
const RFC3339 =
  /^(\d{4}-\d{2}-\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;
/**
 * The days a range may name: none before the epoch (no usage is older), none past year 9999
 * (Postgres' and RFC 3339's four-digit years; an older year also reads as 19xx in Date.UTC).
 */
const FIRST_DAY = '1970-01-01';
const LAST_DAY = '9999-12-31';

export interface DayRange {
  readonly from: Date;
  readonly to: Date;
}

/** What a refusal calls the two bounds: the query's parameters, or the CLI's flags. */
export interface RangeNames {
  readonly from: string;
  readonly to: string;
}

const QUERY_NAMES: RangeNames = { from: 'from', to: 'to' };

function parseDay(name: string, text: string): Date | GwError {
  const timestamp = RFC3339.exec(text);
  const day = DATE.test(text) ? text : timestamp?.[1];
  const date = new Date(DATE.test(text) ? `${text}T00:00:00Z` : text);
  if (day === undefined || Number.isNaN(date.getTime())) {
    return gwError(
      'gw_invalid_request',
      `${name}: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp`,
    );
  }
  const midnight = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(midnight.getTime()) || midnight.toISOString().slice(0, 10) !== day) {
    return gwError('gw_invalid_request', `${name}: ${day} is not a calendar date`);
  }
  // A midnight has no fraction of a second (Date keeps milliseconds only: .0001 would pass).
  if (date.getTime() % DAY_MS !== 0 || /[1-9]/.test(timestamp?.[2] ?? '')) {
    return gwError(
      'gw_invalid_request',
      `${name}: usage is kept per UTC day; give a date or a timestamp at 00:00 UTC`,
    );
  }
  if (date.getTime() < Date.parse(FIRST_DAY) || date.getTime() > Date.parse(LAST_DAY)) {
    return gwError('gw_invalid_request', `${name}: must be a day from ${FIRST_DAY} to ${LAST_DAY}`);
  }
  return date;
}

/** The range asked for; without `to`, up to the end of today (UTC); without `from`, 30 days before `to`. */
export function parseDayRange(
  fromText: string | undefined,
  toText: string | undefined,
  now = new Date(),
  names: RangeNames = QUERY_NAMES,
): DayRange | GwError {
  const to =
    toText === undefined
      ? new Date(Math.floor(now.getTime() / DAY_MS + 1) * DAY_MS)
      : parseDay(names.to, toText);
  if ('code' in to) return to;
  const from =
    fromText === undefined
      ? new Date(to.getTime() - DEFAULT_USAGE_RANGE_DAYS * DAY_MS)
      : parseDay(names.from, fromText);
  if ('code' in from) return from;
  if (from.getTime() >= to.getTime()) {
    return gwError('gw_invalid_request', `${names.from}: must be before ${names.to}`);
  }
  if (to.getTime() - from.getTime() > MAX_USAGE_RANGE_DAYS * DAY_MS) {
    return gwError(
      'gw_invalid_request',
      `${names.to}: the range may span at most ${MAX_USAGE_RANGE_DAYS} days`,
    );
  }
  return { from, to };
}
