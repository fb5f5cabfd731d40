// Old webhook messages go (with their deliveries and attempts): the outbox is not an archive.
// Kept longer than a month, because threshold events dedupe on their messages within a period.
import type { DbPool } from '../db/pool.js';

/** Deletes up to `batch` messages older than `days`; resolves with how many went. */
export async function deleteOldMessages(db: DbPool, days: number, batch = 1000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_messages WHERE id IN (
       SELECT id FROM webhook_messages WHERE created_at < now() - $1 * interval '1 day'
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [days, batch],
  );
  return rowCount ?? 0;
}
