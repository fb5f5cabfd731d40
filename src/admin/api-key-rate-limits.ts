// The request-rate limits of an API key (docs/limits.md; decision 344): requests per minute
// made with the key, and per product user attributed through it. Null: no limit. Enforced by
// reserve.lua; set by the dashboard API and `gw api-key`, on API keys and OAuth tokens alike.

/** The largest limit (and the database's CHECK): a million requests a minute. */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;

export interface ApiKeyRateLimits {
  readonly requestsPerMinute: number | null;
  readonly productUserRequestsPerMinute: number | null;
}

export const NO_RATE_LIMITS: ApiKeyRateLimits = Object.freeze({
  requestsPerMinute: null,
  productUserRequestsPerMinute: null,
});

/** A change of either limit: an absent one is kept, null clears it. */
export type RateLimitChange = Partial<ApiKeyRateLimits>;

/** The limits after a change: each one the change names, the others as they were. */
export function changedRateLimits(
  previous: ApiKeyRateLimits,
  change: RateLimitChange,
): ApiKeyRateLimits {
  return {
    requestsPerMinute:
      change.requestsPerMinute === undefined
        ? previous.requestsPerMinute
        : change.requestsPerMinute,
    productUserRequestsPerMinute:
      change.productUserRequestsPerMinute === undefined
        ? previous.productUserRequestsPerMinute
        : change.productUserRequestsPerMinute,
  };
}

/** Are both limits the same? */
export function sameRateLimits(a: ApiKeyRateLimits, b: ApiKeyRateLimits): boolean {
  return (
    a.requestsPerMinute === b.requestsPerMinute &&
    a.productUserRequestsPerMinute === b.productUserRequestsPerMinute
  );
}

/** Is this a limit a key may have (an integer from 1 to MAX_REQUESTS_PER_MINUTE)? */
export function isRequestsPerMinute(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= MAX_REQUESTS_PER_MINUTE;
}

/** The limits as the API names them (responses, audit details). */
export function rateLimitFields(limits: ApiKeyRateLimits): {
  requests_per_minute: number | null;
  product_user_requests_per_minute: number | null;
} {
  return {
    requests_per_minute: limits.requestsPerMinute,
    product_user_requests_per_minute: limits.productUserRequestsPerMinute,
  };
}

/**
 * A change of the limits as the audit log records it (`api_key.update`): the limits after it,
 * as `rateLimitFields` names them, and before it under `previous_…`, as a rename records its
 * `previous_name`.
 */
export function rateLimitChangeFields(
  previous: ApiKeyRateLimits,
  limits: ApiKeyRateLimits,
): ReturnType<typeof rateLimitFields> & {
  previous_requests_per_minute: number | null;
  previous_product_user_requests_per_minute: number | null;
} {
  return {
    ...rateLimitFields(limits),
    previous_requests_per_minute: previous.requestsPerMinute,
    previous_product_user_requests_per_minute: previous.productUserRequestsPerMinute,
  };
}
