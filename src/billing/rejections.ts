// The spec's errors for a reservation the money layer refused.
import { gwError, type GwError } from '../errors.js';
import { formatNano } from '../money.js';
import type { RateLimitState, ReserveOutcome } from './budget-store.js';

/** Header by which an old client asks for the legacy allowance error code. */
export const LEGACY_ERRORS_HEADER = 'x-gw-legacy-errors';

type Refusal = Exclude<ReserveOutcome, { kind: 'held' }>;
type RateLimited = Extract<ReserveOutcome, { kind: 'rate_limited' }>;

/** What the refused request came with: an app's API key, or a connected app's OAuth token. */
export type LimitedCaller = 'api_key' | 'oauth_token';

export function reservationError(
  refusal: Refusal,
  estimatedCostNano: bigint,
  options: {
    readonly legacyClient: boolean;
    readonly currency: string;
    /** Whose rate limit a refusal names (default: an API key's). */
    readonly caller?: LimitedCaller;
    /** The protocol's rate-limit headers for a rate refusal (decision 353). */
    readonly rateLimitHeaders?: (state: RateLimitState) => Record<string, string>;
    /**
     * Under `limit_output`, the smallest request the gateway would have sent instead (its
     * output lowered to `outputTokens`), when even that did not fit the allowance: the
     * message says so, since the worst case it quotes is not what refused the request.
     */
    readonly smallestRequest?: { readonly outputTokens: number; readonly costNano: bigint };
  },
): GwError {
  const money = (nano: bigint): string => `${formatNano(nano)} ${options.currency}`;
  switch (refusal.kind) {
    case 'no_credential':
      return noCredentialError(refusal.retryAfterMs);
    case 'rate_limited':
      return rateLimitedError(
        refusal,
        options.caller,
        options.rateLimitHeaders?.(refusal.rateLimit),
      );
    case 'wallet_short':
      // An empty wallet is not helped by a smaller max_tokens: say that it needs funds
      // (decision 582); otherwise what the hold is and the two ways past it (decision 489).
      return gwError(
        'gw_reservation_insufficient_balance',
        `the organization wallet cannot reserve ${money(estimatedCostNano)} for this request ` +
          `(available ${money(refusal.availableNano)}): ` +
          (refusal.availableNano <= 0n
            ? 'nothing in it is left to hold (its balance is spent, or held by requests in ' +
              'flight) until the organization adds funds to its wallet'
            : 'the hold is the input and the most output the request allows (without ' +
              'max_tokens, the model’s whole maximum); a smaller max_tokens holds less, or the ' +
              'organization adds funds to its wallet'),
      );
    case 'cap_exceeded': {
      const which = refusal.scope === 'org' ? 'organization' : 'app connection';
      return gwError(
        'gw_cap_exceeded',
        `the ${which} cap of ${money(refusal.capNano)} per month would be exceeded: ` +
          `${money(refusal.spentNano)} spent, ${money(refusal.reservedNano)} held by requests in flight, ` +
          `this request may cost ${money(estimatedCostNano)}`,
        { details: { cap_scope: refusal.scope } },
      );
    }
    case 'allowance_short': {
      const code = options.legacyClient
        ? 'gw_product_user_credits_insufficient'
        : 'gw_product_user_allowance_insufficient';
      const shortfall = estimatedCostNano - refusal.availableNano;
      const smallest = options.smallestRequest;
      const message =
        `estimated request cost ${money(estimatedCostNano)} exceeds the product user's remaining ` +
        `allowance of ${money(refusal.availableNano)}` +
        (smallest
          ? `, which cannot cover even ${smallest.outputTokens} output tokens ` +
            `(${money(smallest.costNano)}), the least the limit_output policy lowers a request to`
          : '');
      return gwError(code, message, {
        wireCode: '403',
        details: {
          provider_specific_fields: {
            error: {
              code,
              message,
              params: {
                cap_amount: formatNano(refusal.capNano),
                remaining_base_allowance: formatNano(refusal.baseRemainingNano),
                promotional_credit_balance: formatNano(refusal.creditsNano),
                available_allowance: formatNano(refusal.availableNano),
                estimated_request_cost: formatNano(estimatedCostNano),
                shortfall: formatNano(shortfall > 0n ? shortfall : 0n),
              },
            },
          },
        },
      });
    }
  }
}

/**
 * 503 gw_provider_credentials_unavailable, with the wait until the first credential stops
 * cooling down when it is known: `Retry-After` in whole seconds (at least 1) and
 * `retry-after-ms`, as a rate limit's, so a client's retry does not come back before a
 * credential can serve it.
 */
function noCredentialError(retryAfterMs: number | undefined): GwError {
  const message =
    'every provider credential for this model is rate limited or out of quota, and the routing mode forbids the system route';
  if (retryAfterMs === undefined) return gwError('gw_provider_credentials_unavailable', message);
  const wait = retryWait(retryAfterMs);
  return gwError('gw_provider_credentials_unavailable', `${message}; retry in ${wait.seconds} s`, {
    headers: wait.headers,
  });
}

/**
 * A wait as a refusal's headers: `Retry-After` in whole seconds (at least 1, rounded up) for
 * every client; `retry-after-ms` the exact wait, which the official OpenAI and Anthropic
 * clients read first.
 */
function retryWait(retryAfterMs: number): {
  readonly seconds: number;
  readonly headers: Readonly<Record<string, string>>;
} {
  const ms = Math.max(1, retryAfterMs);
  const seconds = Math.ceil(ms / 1000);
  return { seconds, headers: { 'retry-after': String(seconds), 'retry-after-ms': String(ms) } };
}

/**
 * 429 gw_rate_limited: which limit, its size and the wait (`retryWait`: a whole second is 10
 * times the wait of a limit of 600 a minute). `rateLimitHeaders`: the protocol's headers on
 * where the key stands (decision 353).
 */
export function rateLimitedError(
  refusal: RateLimited,
  caller: LimitedCaller = 'api_key',
  rateLimitHeaders: Readonly<Record<string, string>> = {},
  /** What the bucket counts: inference requests, or token counts (count_tokens: 353). */
  counted: 'requests' | 'token counts' = 'requests',
): GwError {
  const wait = retryWait(refusal.retryAfterMs);
  const requests = refusal.limitPerMinute === 1 ? counted.slice(0, -1) : counted;
  const holder = caller === 'api_key' ? 'API key' : 'connected app';
  const whose = refusal.scope === 'key' ? `this ${holder}'s limit` : "this product user's limit";
  const under =
    refusal.scope === 'key' ? '' : caller === 'api_key' ? ' under this key' : ' through this app';
  return gwError(
    'gw_rate_limited',
    `${whose} of ${refusal.limitPerMinute} ${requests} per minute${under} is reached; ` +
      `retry in ${wait.seconds} s`,
    {
      details: { rate_limit_scope: refusal.scope },
      headers: { ...wait.headers, ...rateLimitHeaders },
    },
  );
}
