// The low-balance threshold of an organization's wallet: a request that takes the balance
// below it sends wallet.low_balance (the usage writer notices; src/usage-events/). Set by
// `gw wallet alert` and the dashboard, audited.
import { recordAudit } from '../audit/audit.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import {
  assertAmountInRange,
  formatNumeric,
  nanoToNumeric,
  SETTLEMENT_CURRENCY,
} from '../money.js';

export interface WalletAlert {
  readonly org_id: string;
  /** null: no alert. */
  readonly low_balance_threshold: string | null;
  readonly currency: string;
}

/** The organization's alert, or undefined when it has no wallet. */
export async function walletAlert(db: DbPool, orgId: string): Promise<WalletAlert | undefined> {
  const { rows } = await db.query<{ threshold: string | null }>(
    'SELECT low_balance_threshold::text AS threshold FROM wallets WHERE org_id = $1',
    [orgId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return view(orgId, row.threshold);
}

/** Sets (or with null, removes) the threshold; undefined when the organization has no wallet. */
export async function setWalletAlert(
  db: DbPool,
  actor: { readonly userId: string },
  orgId: string,
  thresholdNano: bigint | null,
): Promise<WalletAlert | undefined> {
  if (thresholdNano !== null) assertAmountInRange(thresholdNano, 'the low-balance threshold');
  return withTransaction(db, async (client) => {
    const { rows } = await client.query<{ threshold: string | null }>(
      `UPDATE wallets SET low_balance_threshold = $2 WHERE org_id = $1
       RETURNING low_balance_threshold::text AS threshold`,
      [orgId, thresholdNano === null ? null : nanoToNumeric(thresholdNano)],
    );
    const row = rows[0];
    if (!row) return undefined;
    const alert = view(orgId, row.threshold);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'wallet.set_alert',
      objectType: 'wallet',
      objectId: orgId,
      details: { low_balance_threshold: alert.low_balance_threshold },
    });
    return alert;
  });
}

function view(orgId: string, threshold: string | null): WalletAlert {
  return {
    org_id: orgId,
    low_balance_threshold: formatNumeric(threshold),
    currency: SETTLEMENT_CURRENCY,
  };
}
