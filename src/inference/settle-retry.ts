// Settles with a few retries: settle is idempotent, so a retry after a lost reply is safe.
import type { Logger } from '../log.js';
import type { BudgetStore } from '../billing/budget-store.js';
import type { Admission } from './admission.js';
import { buildUsageRecord, type RequestOutcome } from './settlement.js';

const SETTLE_ATTEMPTS = 3;
const SETTLE_RETRY_DELAY_MS = 50;

export async function settleWithRetry(
  deps: { readonly services: { readonly budget: BudgetStore }; readonly logger: Logger },
  admission: Admission,
  outcome: RequestOutcome,
): Promise<void> {
  const record = buildUsageRecord(admission, outcome);
  for (let attempt = 1; ; attempt += 1) {
    try {
      await deps.services.budget.settle(record, admission.accounts);
      return;
    } catch (error) {
      if (attempt >= SETTLE_ATTEMPTS) {
        // The hold lapses by its TTL; the record is lost with this request. Loud, on purpose.
        deps.logger.error({ err: error, requestId: admission.requestId }, 'settle failed');
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_DELAY_MS * attempt));
    }
  }
}
