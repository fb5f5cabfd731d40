// An organization's wallet as the dashboard and `gw wallet` show it: the live balance and the
// history of top-ups and balance sets, newest last (keyset pages). Changes go through the
// money layer's WalletService (src/billing/wallets.ts), which records and audits them.
import {
  WALLET_TRANSACTION_COLUMNS,
  WalletChangeOwedError,
  type WalletChangeKind,
  walletTransactionView,
  type WalletService,
  type WalletTransaction,
  type WalletTransactionRow,
} from '../billing/wallets.js';
import type { Actor } from '../audit/audit.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { isJsonObject } from '../json-shapes.js';
import { AmountRangeError, formatNano, SETTLEMENT_CURRENCY } from '../money.js';

export interface WalletView {
  org_id: string;
  /** What the organization has: 12-digit decimal strings. */
  balance: string;
  /** Held by requests in flight. */
  reserved: string;
  /** balance − reserved: what new requests may hold. */
  available: string;
  currency: string;
}

export async function readWallet(
  wallets: Pick<WalletService, 'liveBalance'>,
  orgId: string,
): Promise<WalletView> {
  const { balanceNano, reservedNano } = await wallets.liveBalance(orgId);
  return {
    org_id: orgId,
    balance: formatNano(balanceNano),
    reserved: formatNano(reservedNano),
    available: formatNano(balanceNano - reservedNano),
    currency: SETTLEMENT_CURRENCY,
  };
}

/** One page of the wallet's transactions, oldest first. */
export async function listWalletTransactions(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  page: PageRequest,
): Promise<Page<WalletTransaction>> {
  // Transaction ids are numbers: a cursor whose id is not one matches nothing after it.
  if (page.after && !/^\d{1,18}$/.test(page.after.id)) return { rows: [], nextCursor: null };
  const select = `SELECT ${WALLET_TRANSACTION_COLUMNS} FROM wallet_transactions`;
  const paged = await readPage<WalletTransactionRow>(
    db,
    { select, where: 'org_id = $1', params: [orgId] },
    page,
  );
  return { rows: paged.rows.map(walletTransactionView), nextCursor: paged.nextCursor };
}

/** One top-up of the organization, as its history lists it; undefined when there is none. */
export function readWalletTopUp(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  transactionId: string,
): Promise<WalletTransaction | undefined> {
  return readWalletChange(db, 'topup', orgId, transactionId);
}

/** One top-up or balance set of the organization, as its history lists it. */
async function readWalletChange(
  db: Pick<DbPool, 'query'>,
  kind: WalletChangeKind,
  orgId: string,
  transactionId: string,
): Promise<WalletTransaction | undefined> {
  if (!/^\d{1,18}$/.test(transactionId)) return undefined;
  const { rows } = await db.query<WalletTransactionRow>(
    `SELECT ${WALLET_TRANSACTION_COLUMNS} FROM wallet_transactions
      WHERE org_id = $1 AND id = $2 AND kind = $3`,
    [orgId, transactionId, kind],
  );
  return rows[0] && walletTransactionView(rows[0]);
}

/**
 * The top-up that the first request with an idempotency key committed (its effect: decision
 * 542), from the ledger, for the retry that finishes it.
 */
export function committedTopUp(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  transactionId: string,
): Promise<WalletTransaction> {
  return committedChange(db, 'topup', orgId, transactionId);
}

/** The same for a top-up or a balance set (`gw wallet set --idempotency-key`, decision 574). */
export async function committedChange(
  db: Pick<DbPool, 'query'>,
  kind: WalletChangeKind,
  orgId: string,
  transactionId: string,
): Promise<WalletTransaction> {
  const transaction = await readWalletChange(db, kind, orgId, transactionId);
  if (!transaction) throw new Error(`${kind} ${transactionId} is not in the ledger`);
  return transaction;
}

/**
 * What an idempotency key keeps of a committed transaction of a top-up (its effect): the
 * ledger id of its row, when `committed` (what the transaction returned) is one.
 */
export function committedTopUpId(committed: unknown): string | undefined {
  return committedChangeId('topup', committed);
}

/** The same for a top-up or a balance set (whose transaction returns its row: 574). */
export function committedChangeId(kind: WalletChangeKind, committed: unknown): string | undefined {
  if (!isJsonObject(committed)) return undefined;
  const { id } = committed;
  return committed.kind === kind && typeof id === 'string' ? id : undefined;
}

/**
 * A top-up as the dashboard and `gw wallet topup` make it: more than zero (a zero top-up
 * would only write an empty line in the history), the balance kept within the money layer's
 * bound (`gw_amount_out_of_range`, nothing recorded). One committed whose Redis step failed
 * is the top-up made: both callers read the wallet next, which adds it (decision 521), or
 * fails as that step did.
 */
export async function topUpWallet(
  wallets: Pick<WalletService, 'topUp'>,
  orgId: string,
  amountNano: bigint,
  actor: Actor,
): Promise<WalletTransaction | GwError> {
  if (amountNano <= 0n) return gwError('gw_invalid_request', 'amount: must be greater than zero');
  try {
    return await wallets.topUp(orgId, amountNano, actor);
  } catch (error) {
    if (error instanceof AmountRangeError) return gwError('gw_amount_out_of_range', error.message);
    if (error instanceof WalletChangeOwedError) return error.transaction;
    throw error;
  }
}

/**
 * The one answer to a top-up or balance set recorded in the ledger whose step after the commit
 * failed — its Redis step, or the wallet's read after it (WalletChangeOwedError) —, for `gw
 * wallet` (`via: 'cli'`) or the dashboard: 503 `gw_unavailable` saying it was recorded and what
 * adds it, so that nobody makes it again (decisions 542, 554, 557). The dashboard's retry with
 * the same Idempotency-Key answers it (542).
 */
export function recordedChangeError(
  kind: WalletChangeKind,
  transactionId: string,
  orgId: string,
  via: 'cli' | 'dashboard',
): GwError {
  const recorded = `the ${kind === 'topup' ? 'top-up' : 'balance set'} was recorded (wallet transaction ${transactionId})`;
  const message =
    via === 'dashboard'
      ? `${recorded}, but the wallet could not be read after it; send the same request again with the same Idempotency-Key for its answer, and do not top up again`
      : kind === 'topup'
        ? `${recorded}, but the wallet could not be read after it: the live balance gets the top-up at the wallet's next read (gw wallet show --org-id ${orgId}) or by gw reconcile, once; do not top it up again`
        : `${recorded}, but the live balance could not be changed after it: the wallet's next read (gw wallet show --org-id ${orgId}) or gw reconcile applies it, once; setting it again is safe too`;
  return gwError('gw_unavailable', message, { headers: { 'retry-after': '1' } });
}
