// The webhook backlog: deliveries whose attempt is due and not yet made, over every enabled
// endpoint and instance. Rising: the dispatchers cannot keep up (too few, or targets that
// answer slowly). Counted on the pending deliveries' partial index, endpoint by endpoint;
// capped, so a scrape stays cheap however large the backlog grows. A disabled endpoint's
// deliveries are neither counted nor read: they wait for it to be enabled again (decision
// 504), and no dispatcher would send them.
import type { DbPool } from '../db/pool.js';

/** Counting stops here: past it the backlog is large, and its exact size does not matter. */
const COUNT_CAP = 100_000;

export async function webhookDeliveriesDue(db: DbPool): Promise<number> {
  const { rows } = await db.query<{ due: number }>(
    `SELECT count(*)::int AS due FROM (
       SELECT 1 FROM webhook_endpoints e
        CROSS JOIN LATERAL (
          SELECT 1 FROM webhook_deliveries d
           WHERE d.endpoint_id = e.id AND d.state = 'pending' AND d.next_attempt_at <= now()) d
        WHERE e.status = 'enabled'
        LIMIT ${COUNT_CAP}) due`,
  );
  return rows[0]?.due ?? 0;
}
