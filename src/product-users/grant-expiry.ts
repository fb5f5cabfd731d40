// credit_grant.expired: a grant expires by its time passing, with no write that could carry
// the event. A sweep in every instance announces grants past their expiry, once each (the
// grant row is marked in the same transaction; concurrent sweeps skip each other's rows).
import { withTransaction, type DbPool } from '../db/pool.js';
import { emitEvents } from '../webhooks/outbox.js';
import { grantFromRow, type GrantRow } from './management.js';

/** Announces up to `batch` grants that expired; resolves with how many. */
export async function announceExpiredGrants(db: DbPool, batch = 500): Promise<number> {
  return withTransaction(
    db,
    async (client) => {
      const { rows } = await client.query<GrantRow>(
        `UPDATE credit_grants SET expiry_announced_at = now()
        WHERE id IN (SELECT id FROM credit_grants
                      WHERE expiry_announced_at IS NULL AND status = 'active'
                        AND expires_at IS NOT NULL AND expires_at <= now()
                      ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING id, product_user_id, amount::text, currency, expires_at, reason, status,
                  created_at, org_id`,
        [batch],
      );
      await emitEvents(
        client,
        rows.map((row) => ({
          orgId: row.org_id,
          type: 'credit_grant.expired',
          occurredAt: row.expires_at ?? new Date(),
          dedupeKey: `credit_grant.expired:${row.id}`,
          data: grantFromRow(row),
        })),
      );
      return rows.length;
      // Replayable: run again, the grants it marked are skipped and their events deduplicated,
      // so the webhook pool's bound may give its COMMIT up (decision 407).
    },
    { replayable: true },
  );
}
