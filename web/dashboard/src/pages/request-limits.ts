// An API key's request-rate limits (decision 344, docs/limits.md) as the keys page types,
// checks and shows them: a whole number of requests a minute, or none (unlimited).
import { MAX_REQUESTS_PER_MINUTE } from '../../../../src/admin/api-key-rate-limits.js';

/** A key's two limits as the API names them (null: unlimited). */
export interface RequestLimits {
  readonly requests_per_minute: number | null;
  readonly product_user_requests_per_minute: number | null;
}

/** The limits' fields as typed in a form ('' for none). */
export interface TypedLimits {
  readonly perKey: string;
  readonly perUser: string;
}

export const LIMIT_LABELS = {
  perKey: 'Requests per minute',
  perUser: 'Per product user, requests per minute',
} as const;

const MAX_SHOWN = MAX_REQUESTS_PER_MINUTE.toLocaleString();

/**
 * What is wrong with a typed limit (null: nothing): the API's rule, a whole number from 1 to
 * 1,000,000, written with digits only; empty is no limit.
 */
export function limitProblem(text: string, label: string): string | null {
  const value = text.trim();
  if (value === '') return null;
  if (!/^\d+$/.test(value)) {
    return `${label}: enter a whole number with digits only, like 60 (no separators, spaces or decimals), or leave it empty for no limit.`;
  }
  const limit = Number(value);
  if (limit < 1) return `${label}: enter at least 1, or leave it empty for no limit.`;
  if (limit > MAX_REQUESTS_PER_MINUTE) return `${label}: enter at most ${MAX_SHOWN}.`;
  return null;
}

/** The first problem of the typed limits (null: both can be sent). */
export const limitsProblem = (typed: TypedLimits): string | null =>
  limitProblem(typed.perKey, LIMIT_LABELS.perKey) ??
  limitProblem(typed.perUser, LIMIT_LABELS.perUser);

/** The typed limits as the API takes them (checked first: see limitsProblem). */
export const limitsOf = (typed: TypedLimits): RequestLimits => ({
  requests_per_minute: typed.perKey.trim() === '' ? null : Number(typed.perKey.trim()),
  product_user_requests_per_minute:
    typed.perUser.trim() === '' ? null : Number(typed.perUser.trim()),
});

/** A key's limits as a form starts with them. */
export const typedLimits = (limits: RequestLimits): TypedLimits => ({
  perKey: limits.requests_per_minute === null ? '' : String(limits.requests_per_minute),
  perUser:
    limits.product_user_requests_per_minute === null
      ? ''
      : String(limits.product_user_requests_per_minute),
});

/** One limit in words: `60/min`, or `unlimited`. */
export const limitText = (limit: number | null): string =>
  limit === null ? 'unlimited' : `${limit.toLocaleString()}/min`;

/**
 * A key's limits in a few words, in the pieces a line may break between: `['unlimited']`,
 * `['60/min']`, `['60/min', '10/min per user']`, `['unlimited', '10/min per user']`.
 */
export function limitsSummary(limits: RequestLimits): string[] {
  const perKey = limitText(limits.requests_per_minute);
  const perUser = limits.product_user_requests_per_minute;
  return perUser === null ? [perKey] : [perKey, `${limitText(perUser)} per user`];
}

/** Is `next` stricter than `now` (a limit set where there was none, or made smaller)? */
const lower = (now: number | null, next: number | null): boolean =>
  next !== null && (now === null || next < now);

/**
 * Would the change refuse requests that pass now (either limit set or lowered)? Such a change
 * asks first: apps sending more than the new limit start getting 429 at once.
 */
export const lowersALimit = (now: RequestLimits, next: RequestLimits): boolean =>
  lower(now.requests_per_minute, next.requests_per_minute) ||
  lower(now.product_user_requests_per_minute, next.product_user_requests_per_minute);

/**
 * The limits `next` changes from `now`: what an edit form sends, so a change someone else made
 * meanwhile to the other limit is kept (not overwritten with what the form was opened with).
 */
export function changedLimits(now: RequestLimits, next: RequestLimits): Partial<RequestLimits> {
  const changed: { -readonly [Field in keyof RequestLimits]?: RequestLimits[Field] } = {};
  if (next.requests_per_minute !== now.requests_per_minute) {
    changed.requests_per_minute = next.requests_per_minute;
  }
  if (next.product_user_requests_per_minute !== now.product_user_requests_per_minute) {
    changed.product_user_requests_per_minute = next.product_user_requests_per_minute;
  }
  return changed;
}
