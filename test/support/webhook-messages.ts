// The outbox as the tests read it: an endpoint that takes every event (so events are written
// as messages; nothing is delivered to it), and the messages an org got, as their `data`.
import type { DbPool } from '../../src/db/pool.js';
import { newId } from '../../src/ids.js';

/** Gives `orgId` an enabled endpoint for every event type (its URL is never called). */
export async function addCatchAllEndpoint(db: Pick<DbPool, 'query'>, orgId: string): Promise<void> {
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, secret_sealed) VALUES ($1, $2, $3, 'sealed')`,
    [newId('wh'), orgId, 'https://example.com/hook'],
  );
}

/** The `data` of `orgId`'s messages of `eventType`, oldest first. */
export async function messageData<Data>(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  eventType: string,
): Promise<Data[]> {
  const { rows } = await db.query<{ payload: string }>(
    `SELECT payload FROM webhook_messages WHERE org_id = $1 AND event_type = $2 ORDER BY seq`,
    [orgId, eventType],
  );
  return rows.map((row) => (JSON.parse(row.payload) as { data: Data }).data);
}
