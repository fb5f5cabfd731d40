// The request-rate limits of an API key (docs/limits.md; decision 344): requests per minute
// made with the key, and per product user attributed through it. Null: no limit. Enforced by
// reserve.lua; set by the dashboard API and `gw api-key`.

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
