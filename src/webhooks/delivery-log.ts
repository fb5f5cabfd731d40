// The delivery log of an endpoint (each message sent to it, its state and its attempts),
// redelivery (of one message, or of everything since a time) and test events.
import { z } from 'zod';
import { recordAudit, type Actor } from '../audit/audit.js';
import { newestFirstPage, newestFirstPageQuerySchema } from '../db/pages.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { newId } from '../ids.js';
import {
  disabledRefusal,
  endpointView,
  findEndpoint,
  notFound,
  type EndpointRow,
} from './endpoints.js';
import { eventPayload, eventSubject, type EventType } from './events.js';
import { redeliverSince } from './redelivery-batches.js';

/** Attempts shown per delivery (the newest). */
export const ATTEMPTS_SHOWN = 10;

/** The log's query (`limit`, `cursor`, `status`): the dashboard route's and the CLI's flags. */
export const deliveriesQuery = newestFirstPageQuerySchema.extend({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
});

export interface DeliveryFilter {
  readonly limit: number;
  /** The last delivery id of the previous page (pages go newest first). */
  readonly before: string | null;
  readonly state?: 'pending' | 'delivered' | 'failed' | undefined;
}

interface DeliveryRow {
  readonly id: string;
  readonly message_id: string;
  readonly event_type: string;
  readonly payload: string;
  readonly state: string;
  readonly attempt_count: number;
  readonly next_attempt_at: Date;
  readonly last_attempt_at: Date | null;
  readonly delivered_at: Date | null;
  readonly created_at: Date;
  readonly attempts: Array<{
    attempted_at: string;
    status_code: number | null;
    latency_ms: number;
    response_snippet: string;
    error: string | null;
  }>;
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/** The endpoint's deliveries, newest first, each with its latest attempts. */
export async function listDeliveries(
  db: DbPool,
  orgId: string,
  endpointId: string,
  filter: DeliveryFilter,
): Promise<{ data: Array<Record<string, unknown>>; next_cursor: string | null } | GwError> {
  const endpoint = await findEndpoint(db, orgId, endpointId);
  if (!endpoint) return notFound();
  const { rows } = await db.query<DeliveryRow>(
    `SELECT d.id::text, d.message_id, m.event_type, m.payload, d.state, d.attempt_count,
            d.next_attempt_at, d.last_attempt_at, d.delivered_at, d.created_at,
            COALESCE((SELECT json_agg(a ORDER BY a.id DESC) FROM (
               SELECT id, to_char(attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS attempted_at,
                      status_code, latency_ms, response_snippet, error
                 FROM webhook_attempts WHERE delivery_id = d.id ORDER BY id DESC LIMIT $4) a), '[]') AS attempts
       FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.endpoint_id = $1 AND ($2::bigint IS NULL OR d.id < $2::bigint)
        AND ($5::text IS NULL OR d.state = $5)
      ORDER BY d.id DESC LIMIT $3`,
    [endpointId, filter.before, filter.limit + 1, ATTEMPTS_SHOWN, filter.state ?? null],
  );
  const { rows: page, nextCursor } = newestFirstPage(rows, filter.limit);
  return {
    data: page.map((row) => ({
      id: row.id,
      message_id: row.message_id,
      event_type: row.event_type,
      status: row.state,
      attempt_count: row.attempt_count,
      next_attempt_at: row.state === 'pending' ? row.next_attempt_at.toISOString() : null,
      last_attempt_at: iso(row.last_attempt_at),
      delivered_at: iso(row.delivered_at),
      created_at: row.created_at.toISOString(),
      payload: JSON.parse(row.payload) as unknown,
      attempts: row.attempts.map(
        ({ attempted_at, status_code, latency_ms, response_snippet, error }) => ({
          attempted_at,
          status_code,
          latency_ms,
          response_snippet,
          error,
        }),
      ),
    })),
    next_cursor: nextCursor,
  };
}

export type RedeliverySelection =
  | { readonly messageId: string }
  /** Every message the endpoint was sent (or was to be sent) since then. */
  | { readonly since: Date };

/**
 * Queues messages again for the endpoint, from the start of the retry schedule: one, or all
 * since a time (delivered ones too; in batches, src/webhooks/redelivery-batches.ts). Receivers
 * dedupe on webhook-id, which does not change.
 */
export async function redeliver(
  db: DbPool,
  actor: Actor,
  orgId: string,
  endpointId: string,
  selection: RedeliverySelection,
): Promise<{ redelivered: number } | GwError> {
  if ('since' in selection) return redeliverSince(db, actor, orgId, endpointId, selection.since);
  return withEnabledEndpoint(db, orgId, endpointId, async (client) => {
    const { rowCount } = await client.query(
      `UPDATE webhook_deliveries
          SET state = 'pending', retry_step = 0, next_attempt_at = now()
        WHERE endpoint_id = $1 AND message_id = $2`,
      [endpointId, selection.messageId],
    );
    if (!rowCount) {
      return gwError('gw_not_found', 'no message with this id was sent to this endpoint');
    }
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.redeliver',
      objectType: 'webhook',
      objectId: endpointId,
      details: { message_id: selection.messageId },
    });
    return { redelivered: rowCount };
  });
}

/** Queues a `webhook.test` message for this endpoint alone (whatever its event filter). */
export async function sendTestEvent(
  db: DbPool,
  actor: Actor,
  orgId: string,
  endpointId: string,
): Promise<{ message_id: string } | GwError> {
  return withEnabledEndpoint(db, orgId, endpointId, async (client, endpoint) => {
    const messageId = newId('msg');
    const view = endpointView(endpoint);
    await queueForEndpoint(
      client,
      endpoint,
      messageId,
      'webhook.test',
      eventPayload('webhook.test', new Date(), view),
      eventSubject('webhook.test', orgId, view),
    );
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.test',
      objectType: 'webhook',
      objectId: endpointId,
      details: { message_id: messageId },
    });
    return { message_id: messageId };
  });
}

/**
 * Runs `queue` in one transaction with the endpoint, if it is the organization's and enabled.
 * The endpoint's row is locked: an endpoint deleted (or disabled) between the check and the
 * insert made the insert break its foreign key (a 500 under the fuzz suite).
 */
function withEnabledEndpoint<T>(
  db: DbPool,
  orgId: string,
  endpointId: string,
  queue: (client: DbClient, endpoint: EndpointRow) => Promise<T | GwError>,
): Promise<T | GwError> {
  return withTransaction(db, async (client) => {
    const endpoint = await findEndpoint(client, orgId, endpointId, true);
    if (!endpoint) return notFound();
    if (endpoint.status !== 'enabled') return disabledRefusal();
    return queue(client, endpoint);
  });
}

async function queueForEndpoint(
  client: DbClient,
  endpoint: EndpointRow,
  messageId: string,
  type: EventType,
  payload: string,
  subject: string,
): Promise<void> {
  await client.query(
    `WITH message AS (
       INSERT INTO webhook_messages (id, org_id, event_type, payload) VALUES ($1, $2, $3, $4)
       RETURNING id, seq)
     INSERT INTO webhook_deliveries (message_id, endpoint_id, message_seq, lane)
     SELECT id, $5, seq, gw_webhook_lane($6) FROM message`,
    [messageId, endpoint.org_id, type, payload, endpoint.id, subject],
  );
}
