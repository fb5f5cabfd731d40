// The webhook backlog: deliveries whose attempt is due and not yet made, over every endpoint
// and instance. Rising: the dispatchers cannot keep up (too few, or targets that answer slowly).
// Counted on the pending deliveries' partial index; capped, so a scrape stays cheap however
// large the backlog grows.
import type { DbPool } from '../db/pool.js';

/** Counting stops here: past it the backlog is large, and its exact size does not matter. */
const COUNT_CAP = 100_000;

export async function webhookDeliveriesDue(db: DbPool): Promise<number> {
  const { rows } = await db.query<{ due: number }>(
    `SELECT count(*)::int AS due FROM (
       SELECT 1 FROM webhook_deliveries
        WHERE state = 'pending' AND next_attempt_at <= now()
        LIMIT ${COUNT_CAP}) due`,
  );
  return rows[0]?.due ?? 0;
}
