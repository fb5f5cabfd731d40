// Settles with a few retries: settle is idempotent, so a retry after a lost reply is safe.
// A settle that still fails (Redis unreachable) goes to the settle spool: the vendor call
// happened, so its usage is recorded and charged once Redis is back, and the client gets
// the answer as if it had settled (see "A spooled settle counts as settled"). A settle that
// got no answer within REDIS_TIMEOUT_MS goes to the spool at once: a retry would queue behind
// it on the same connection and wait as long; the settle given up on may still run when Redis
// answers again, and settle is idempotent, so with the spooled one it charges once
// (decision 318).
import type { Logger } from '../log.js';
import { isCommandTimeout } from '../redis/command-timeout.js';
import type { BudgetStore, RequestAccounts } from '../billing/budget-store.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import type { Admission } from './admission.js';
import { buildUsageRecord, type RequestOutcome } from './settlement.js';

const SETTLE_ATTEMPTS = 3;
const SETTLE_RETRY_DELAY_MS = 50;

/** Where a settle that keeps failing is kept durably (SettleSpool). */
export interface SettleFallback {
  append(record: UsageRecord, accounts: RequestAccounts): Promise<void>;
}

/** Told of every request settled (or spooled to be): the metrics' counters. */
export interface SettledCounter {
  settled(record: UsageRecord): void;
}

export async function settleWithRetry(
  deps: {
    readonly services: { readonly budget: BudgetStore; readonly settleSpool?: SettleFallback };
    readonly logger: Logger;
    readonly settledCounter?: SettledCounter;
  },
  admission: Admission,
  outcome: RequestOutcome,
): Promise<void> {
  const record = buildUsageRecord(admission, outcome);
  for (let attempt = 1; ; attempt += 1) {
    try {
      await deps.services.budget.settle(record, admission.accounts);
      deps.settledCounter?.settled(record);
      return;
    } catch (error) {
      if (attempt >= SETTLE_ATTEMPTS || isCommandTimeout(error)) {
        const spool = deps.services.settleSpool;
        if (spool) {
          try {
            await spool.append(record, admission.accounts);
            deps.settledCounter?.settled(record); // charged once, when the spool replays it
            deps.logger.warn(
              { err: error, requestId: admission.requestId },
              'settle failed; usage spooled to disk until Redis is back',
            );
            return;
          } catch (spoolError) {
            deps.logger.error(
              { err: spoolError, requestId: admission.requestId },
              'settle spool write failed',
            );
          }
        }
        // Nowhere to keep it: the hold lapses by its TTL and the record is lost. Loud.
        deps.logger.error({ err: error, requestId: admission.requestId }, 'settle failed');
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_DELAY_MS * attempt));
    }
  }
}
