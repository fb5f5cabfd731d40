// The webhook outbox. An event is written in the transaction of the change it describes (the
// caller's client), as one message per event and one delivery per endpoint of the
// organization that wants its type (a disabled one's wait for it: decision 504) — in one
// statement. An organization no endpoint listens to gets no rows at all. The dispatcher
// (dispatcher.ts) delivers what this queues.
//
// `emitEvent` is the one call other features make: `await emitEvent(client, orgId,
// 'oauth_connection.created', view)` inside their transaction.
import type { DbPool } from '../db/pool.js';
import { newId } from '../ids.js';
import { eventPayload, eventSubject, type EventType } from './events.js';

/** Anything that runs a query: a pool, or a client inside a transaction. */
export type Queryable = Pick<DbPool, 'query'>;

export interface OutboxEvent {
  readonly orgId: string;
  readonly type: EventType;
  /** The object, in the shape the API returns it. */
  readonly data: unknown;
  /** When it happened (the payload's `timestamp`); now by default. */
  readonly occurredAt?: Date;
  /** An event with a key is written once: a later one with the same key is dropped. */
  readonly dedupeKey?: string | null;
}

/**
 * SQL: does endpoint `e` want message `m` (same organization, type in its filter)? Enabled or
 * not (decision 504): a disabled endpoint's messages wait for it, as its pending ones do, and
 * go out when it is enabled again; to stop an endpoint's messages for good, delete it.
 */
function wants(endpoint: string, message: string): string {
  return `${endpoint}.org_id = ${message}.org_id
    AND (${endpoint}.event_types = '{}' OR ${message}.event_type = ANY (${endpoint}.event_types))`;
}

/**
 * Three CTEs (to follow `WITH`, after the CTE named `source`) that queue the messages `source`
 * selects — columns id, org_id, event_type, payload, dedupe_key, subject, ord — for every
 * endpoint that wants them, in `ord` order, each delivery on its subject's lane. Another
 * statement's CTE (the product-user upsert) embeds them to write its event in the same
 * statement.
 */
export function queueMessagesSql(source: string): string {
  return `webhook_new_messages AS (
      INSERT INTO webhook_messages (id, org_id, event_type, payload, dedupe_key)
      SELECT s.id, s.org_id, s.event_type, s.payload, s.dedupe_key FROM ${source} s
       WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE ${wants('e', 's')})
       ORDER BY s.ord
      ON CONFLICT (dedupe_key) DO NOTHING
      RETURNING id, seq, org_id, event_type),
    webhook_targets AS (
      -- Locked against deletion until this transaction ends: an endpoint deleted after this
      -- statement's snapshot was taken is skipped here, not a foreign-key failure below.
      SELECT e.id, e.org_id, e.event_types FROM webhook_endpoints e
       WHERE e.org_id IN (SELECT org_id FROM webhook_new_messages)
       FOR KEY SHARE),
    webhook_new_deliveries AS (
      INSERT INTO webhook_deliveries (message_id, endpoint_id, message_seq, lane)
      SELECT m.id, e.id, m.seq, gw_webhook_lane(s.subject)
        FROM webhook_new_messages m JOIN ${source} s ON s.id = m.id
        JOIN webhook_targets e ON ${wants('e', 'm')}
       ORDER BY m.seq, e.id
      RETURNING id)`;
}

/** The message id, body and subject of an event (what `queueMessagesSql`'s source selects). */
export function outboxMessage(event: OutboxEvent): {
  id: string;
  payload: string;
  subject: string;
} {
  return {
    id: newId('msg'),
    payload: eventPayload(event.type, event.occurredAt ?? new Date(), event.data),
    subject: eventSubject(event.type, event.orgId, event.data),
  };
}

/** Queues events; resolves with the number of deliveries queued. */
export async function emitEvents(
  client: Queryable,
  events: readonly OutboxEvent[],
): Promise<number> {
  if (events.length === 0) return 0;
  const messages = events.map(outboxMessage);
  const { rows } = await client.query<{ queued: number }>(
    `WITH webhook_source AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
         WITH ORDINALITY AS s (id, org_id, event_type, payload, dedupe_key, subject, ord)),
     ${queueMessagesSql('webhook_source')}
     SELECT count(*)::int AS queued FROM webhook_new_deliveries`,
    [
      messages.map((message) => message.id),
      events.map((event) => event.orgId),
      events.map((event) => event.type),
      messages.map((message) => message.payload),
      events.map((event) => event.dedupeKey ?? null),
      messages.map((message) => message.subject),
    ],
  );
  return rows[0]?.queued ?? 0;
}

/**
 * Queues one event for the organization's endpoints, on `client` — pass the transaction of
 * the change, so the event exists exactly when the change does.
 */
export function emitEvent(
  client: Queryable,
  orgId: string,
  type: EventType,
  data: unknown,
  options: Pick<OutboxEvent, 'occurredAt' | 'dedupeKey'> = {},
): Promise<number> {
  return emitEvents(client, [{ orgId, type, data, ...options }]);
}
