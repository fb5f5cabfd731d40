// POST /dashboard/api/orgs/{org_id}/wallet/top-ups {"amount"} (admin or owner): adds funds
// through the money layer's top-up (the rule `gw wallet topup` uses: the wallet put in Redis,
// the top-up recorded in Postgres, bounded, then applied to the live balance), audited. Only where the operator allows it
// (DASHBOARD_WALLET_TOPUP, off by default): a dashboard top-up takes no payment, so it suits
// a gateway whose organizations belong to the operator, not one open to sign-ups. A retry with
// the Idempotency-Key of a top-up that committed and then failed before answering (its Redis
// step) finishes it: the top-up added to the live wallet, once, and its answer (decision 542).
import { z } from 'zod';
import {
  committedTopUp,
  committedTopUpId,
  readWallet,
  recordedChangeError,
  topUpWallet,
  type WalletView,
} from '../../../admin/wallet.js';
import type { WalletService, WalletTransaction } from '../../../billing/wallets.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError, isGwError, type GwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { parseAmountField } from '../../../money.js';
import { amountInput, inOrg } from '../schemas.js';
import { walletSchema, walletTransactionSchema } from './answers.js';

export interface WalletTopUpDeps {
  readonly db: DbPool;
  readonly wallets: Pick<WalletService, 'liveBalance' | 'topUp'>;
  readonly dashboardSettings: { readonly walletTopUp: boolean };
}

export const topUpWalletRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/wallet/top-ups',
  summary: "Adds funds to the organization's wallet (when the operator allows it)",
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: z.strictObject({ amount: amountInput }),
  responses: {
    201: {
      description: 'the top-up and the wallet after it',
      schema: z.object({ transaction: walletTransactionSchema, wallet: walletSchema }),
    },
  },
  errors: ['gw_wallet_topup_disabled', 'gw_amount_out_of_range', 'gw_unavailable'],
  async handler({ caller, body }, deps: WalletTopUpDeps) {
    if (!deps.dashboardSettings.walletTopUp) {
      return gwError(
        'gw_wallet_topup_disabled',
        'wallet top-ups from the dashboard are off on this gateway (DASHBOARD_WALLET_TOPUP): ' +
          'the operator of this gateway adds funds (gw wallet topup)',
      );
    }
    const amountNano = parseAmountField('amount', body.amount);
    if (isGwError(amountNano)) return amountNano;
    const transaction = await topUpWallet(deps.wallets, caller.org.id, amountNano, caller.actor);
    if (isGwError(transaction)) return transaction;
    return answerTopUp(deps.wallets, caller.org.id, transaction);
  },
  finishesCommitted: {
    // The top-up's own transaction (WalletService.topUp's) returns its ledger row.
    effectOf: committedTopUpId,
    // The wallet's read adds the top-up its Redis step left owed (decision 521), once.
    async answer(transactionId, { caller }, deps: WalletTopUpDeps) {
      const transaction = await committedTopUp(deps.db, caller.org.id, transactionId);
      return answerTopUp(deps.wallets, caller.org.id, transaction);
    },
  },
});

/**
 * A recorded top-up's answer: it and the wallet after it, whose read adds it to the live balance
 * when its Redis step failed (decision 521). A read that fails answers 503 saying the top-up was
 * recorded, whatever failed: a Redis closed, timed out or refusing is a 503 on every route (555),
 * but here anything else too — an API client that drops its key after a 500 would top up again
 * (the dashboard keeps it after any 5xx since 559); the retry with the same key finishes this
 * top-up (554).
 */
async function answerTopUp(
  wallets: WalletTopUpDeps['wallets'],
  orgId: string,
  transaction: WalletTransaction,
): Promise<{ transaction: WalletTransaction; wallet: WalletView } | GwError> {
  try {
    return { transaction, wallet: await readWallet(wallets, orgId) };
  } catch {
    return recordedChangeError('topup', transaction.id, orgId, 'dashboard');
  }
}
