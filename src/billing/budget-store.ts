// What the request path needs from the money layer: one atomic reserve before the upstream
// call and one idempotent settle after it. The Redis implementation is redis-budget-store.ts.
import type { GwError } from '../errors.js';
import type { UsageRecord } from '../ledger/usage-record.js';

export interface ReserveRequest {
  readonly requestId: string;
  readonly orgId: string;
  /** Worst-case cost of the request (input + max output), nano-units. */
  readonly amountNano: bigint;
  /** False when something other than the org wallet pays (e.g. a BYOK credential). */
  readonly walletPays: boolean;
}

export type ReserveOutcome = { readonly ok: true } | { readonly ok: false; readonly error: GwError };

export interface BudgetStore {
  reserve(request: ReserveRequest): Promise<ReserveOutcome>;
  /**
   * Moves the actual cost from held to spent, releases the rest and appends the usage record
   * to the ledger stream, atomically. Settling the same request twice changes nothing.
   */
  settle(record: UsageRecord): Promise<'settled' | 'already_settled'>;
}
