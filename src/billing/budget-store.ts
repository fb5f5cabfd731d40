// What the request path needs from the money layer: one atomic reserve over every account a
// request touches, before the upstream call, and one idempotent settle after it. The store
// reports facts; the caller turns them into the spec's errors. Redis implementation:
// redis-budget-store.ts.
import type { CreditMode } from './modes.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import type { Period } from '../periods.js';

/** A spending cap over a period (org or app connection). */
export interface CapAccount {
  readonly capNano: bigint;
  readonly period: Period;
}

/** A product user's allowance account for the current period. */
export interface UserAccount {
  readonly productUserId: string;
  /** Base cap for the period; null: no cap (unlimited base allowance). */
  readonly capNano: bigint | null;
  readonly creditMode: CreditMode;
  readonly period: Period;
}

/** BYOK credentials eligible for a request, by priority tier (tier 1 first). */
export interface CredentialChoice {
  readonly tiers: ReadonlyArray<readonly string[]>;
  /** True when the system route must not serve if no credential can. */
  readonly byokOnly: boolean;
}

/** Every account a request touches, besides the org wallet. */
export interface RequestAccounts {
  readonly orgId: string;
  readonly appConnectionId: string;
  readonly orgCap: CapAccount | null;
  readonly connectionCap: CapAccount | null;
  readonly user: UserAccount | null;
  /** False when something other than the org wallet pays (a picked BYOK credential does too). */
  readonly walletPays: boolean;
  /** BYOK credentials to pick from (null: the system route serves). */
  readonly credentials: CredentialChoice | null;
}

/** A period as settle names it: by its key (the accounts' Redis keys carry it). */
export interface PeriodKey {
  readonly key: string;
}

/**
 * The accounts as settle needs them (what a request's in-flight draft keeps): periods by key,
 * no credentials. RequestAccounts is one.
 */
export interface SettleAccounts {
  readonly orgId: string;
  readonly appConnectionId: string;
  readonly orgCap: { readonly capNano: bigint; readonly period: PeriodKey } | null;
  readonly connectionCap: { readonly capNano: bigint; readonly period: PeriodKey } | null;
  readonly user: {
    readonly productUserId: string;
    readonly capNano: bigint | null;
    readonly creditMode: CreditMode;
    readonly period: PeriodKey;
  } | null;
}

/**
 * The request-rate limits a request counts against (docs/decisions.md 344): its API key's, and
 * its product user's under that key (only when it has one). Null: no limit.
 */
export interface RequestRateLimits {
  readonly apiKeyId: string;
  readonly keyPerMinute: number | null;
  readonly productUserPerMinute: number | null;
  /**
   * The product user the request names, by its external id (known before it is looked up):
   * how a refusal by its bucket is remembered (decision 362).
   */
  readonly externalUserId?: string | undefined;
}

export interface ReserveRequest {
  readonly requestId: string;
  readonly accounts: RequestAccounts;
  /** Worst-case cost of the request (input + max output), nano-units. */
  readonly amountNano: bigint;
  /**
   * The record to settle if this instance dies before the request settles (the charging
   * policy's `instance_lost` outcome): kept beside the holds until settle removes it.
   */
  readonly lostRecord?: UsageRecord;
  /** Absent: the request has no rate limit (nothing is read or written for it). */
  readonly rateLimits?: RequestRateLimits | undefined;
}

/**
 * Where a request stands against its rate limits, as its answer's headers tell the client
 * (docs/decisions.md 353): the tighter bucket of the key's and its product user's.
 */
export interface RateLimitState {
  readonly limitPerMinute: number;
  /** The requests that bucket would still pass now (0 when it refused this one). */
  readonly remaining: number;
  /** How long until that bucket is full again (ms from `atMs`). */
  readonly resetMs: number;
  /** The clock reading `resetMs` counts from: the now the bucket was read at. */
  readonly atMs: number;
}

export type ReserveOutcome =
  | {
      readonly kind: 'held';
      readonly credentialId: string | null;
      /** Absent when the request has no rate limit. */
      readonly rateLimit?: RateLimitState;
    }
  | NoCredentialOutcome
  | { readonly kind: 'wallet_short'; readonly availableNano: bigint }
  | {
      readonly kind: 'rate_limited';
      readonly scope: 'key' | 'product_user';
      readonly limitPerMinute: number;
      /** When the request would pass (ms from now). */
      readonly retryAfterMs: number;
      /** The refusing bucket (remaining 0), for the answer's headers. */
      readonly rateLimit: RateLimitState;
    }
  | {
      readonly kind: 'cap_exceeded';
      readonly scope: 'org' | 'app_connection';
      readonly capNano: bigint;
      readonly spentNano: bigint;
      readonly reservedNano: bigint;
    }
  | {
      readonly kind: 'allowance_short';
      readonly capNano: bigint;
      readonly spentNano: bigint;
      readonly baseRemainingNano: bigint;
      readonly creditsNano: bigint;
      /** What the user can still spend now, after other in-flight holds. */
      readonly availableNano: bigint;
    };

export type FailoverOutcome =
  | { readonly kind: 'credential'; readonly credentialId: string }
  | { readonly kind: 'system' }
  | { readonly kind: 'wallet_short'; readonly availableNano: bigint }
  | NoCredentialOutcome;

/**
 * Every credential the request may use is cooling down, and the routing forbids the system
 * route.
 */
export interface NoCredentialOutcome {
  readonly kind: 'no_credential';
  /** Until the first of them stops cooling down (ms from now); absent when not known. */
  readonly retryAfterMs?: number;
}

/** A request that holds `amountNano` on its accounts (reserve.lua, and failover.lua's wallet). */
export interface HeldRequest {
  readonly requestId: string;
  readonly accounts: RequestAccounts;
  readonly amountNano: bigint;
}

export interface FailoverRequest {
  readonly requestId: string;
  readonly accounts: RequestAccounts;
  readonly failedCredentialId: string;
  readonly cooldownUntilMs: number;
  readonly amountNano: bigint;
  /** Why: the vendor refused the key (401/403), or it cannot serve now (rate limit, quota…). */
  readonly failure: 'rejected' | 'failed_over';
  /** The vendor's HTTP status (for the webhook event). */
  readonly upstreamStatus: number;
}

export type RateLimitedOutcome = Extract<ReserveOutcome, { kind: 'rate_limited' }>;

/** A bucket a route that holds nothing counts its requests in (count_tokens: decision 353). */
export interface RateBucket {
  readonly orgId: string;
  readonly apiKeyId: string;
  readonly limitPerMinute: number;
  /** The request counted: one arrival per request, however often the count is sent. */
  readonly requestId: string;
}

export type RateTakeOutcome =
  { readonly kind: 'passed'; readonly rateLimit: RateLimitState } | RateLimitedOutcome;

export interface BudgetStore {
  reserve(request: ReserveRequest): Promise<ReserveOutcome>;
  /**
   * The refusal a reserve would answer now by the key's own limit, when this instance's
   * reserves have already found the key past it (recent-rate-refusals.ts); undefined when
   * none is known, and then only the reserve knows. Asked before the product user is looked
   * up: a key past its limit costs no Postgres write and no token count.
   */
  knownRateRefusal(limits: RequestRateLimits): RateLimitedOutcome | undefined;
  /**
   * One token count against the key's bucket of counts (decision 353): counted when it passes.
   * Its own bucket, apart from the key's inference requests; scope `key`.
   */
  takeCountTokens(bucket: RateBucket): Promise<RateTakeOutcome>;
  /**
   * Cools a failed BYOK credential down (for every instance) and picks the next one, or the
   * system route (holding the amount on the org wallet, which then pays). The call that starts
   * the cooldown also records the provider_credential webhook event.
   */
  failover(request: FailoverRequest): Promise<FailoverOutcome>;
  /**
   * Keeps a running request's holds from lapsing until it settles (a stream may outlast
   * RESERVATION_TTL_MS: the lapse is for an instance that died): their lapse is moved on while
   * it runs. Returns the function that stops it (call it once the request has settled).
   * `renewAtOnce`: the first renewal is sent now, not a third of the lapse from now (holds that
   * nobody renewed for a while: a spooled settle taken over from a gone instance).
   */
  keepHeld(request: HeldRequest, options?: { readonly renewAtOnce?: boolean }): () => void;
  /**
   * Releases the request's holds, charges the actual cost (base allowance first, then
   * credits) and appends the usage record to the ledger stream, atomically. Settling the same
   * request twice changes nothing.
   */
  settle(record: UsageRecord, accounts: SettleAccounts): Promise<'settled' | 'already_settled'>;
}
