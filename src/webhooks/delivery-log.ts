// The delivery log of an endpoint (each message sent to it, its state and its attempts),
// redelivery (of one message, or of everything since a time) and test events.
import { z } from 'zod';
import { recordAudit, type Actor } from '../audit/audit.js';
import { newestFirstPage, newestFirstPageQuerySchema } from '../db/pages.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, isDependencyUnavailable, isGwError, type GwError } from '../errors.js';
import { newId } from '../ids.js';
import {
  disabledRefusal,
  endpointView,
  findEndpoint,
  notFound,
  type EndpointRow,
} from './endpoints.js';
import { eventPayload, eventSubject, type EventType } from './events.js';

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
 * Deliveries one transaction of a redelivery since a time rewrites: a short statement each
 * (tens of ms), so none nears DATABASE_TIMEOUT_MS and the dispatchers wait for a batch at most,
 * never for the whole range (decision 577).
 */
export const REDELIVERY_BATCH = 1000;

/**
 * Queues messages again for the endpoint, from the start of the retry schedule: one, or all
 * since a time (delivered ones too). Receivers dedupe on webhook-id, which does not change.
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

/** Where a redelivery since a time stands: the last delivery it rewrote, in its order. */
interface RedeliveryCursor {
  /** created_at as Postgres writes it (text: microseconds, which a Date would lose). */
  readonly createdAt: string;
  readonly id: string;
}

interface RewrittenBatch {
  readonly rewritten: number;
  /** The batch's last delivery; null when there was none (the range is done). */
  readonly last: (RedeliveryCursor & { readonly createdAtMs: string }) | null;
  /** Whether the batch was full: more may follow it. */
  readonly full: boolean;
}

/**
 * Every delivery of the endpoint made from `since` until the call began, in batches of
 * REDELIVERY_BATCH, each its own transaction, in (created_at, id) order from where the last
 * ended (index webhook_deliveries_created_id). The first checks the endpoint (404, 409) and
 * writes the call's one audit entry; each later one locks the endpoint as the first did (548)
 * and sets that entry's count to what has been committed, so the log and the deliveries agree
 * after every batch. Deliveries made after the call began are new, pending anyway, and not
 * walked (an endpoint sent messages faster than batches go would keep the call running). If
 * a later batch fails on Postgres, the answer (503) says how far the call got and what to send
 * to go on from there: the same request would rewrite, and send once more, what was done.
 */
async function redeliverSince(
  db: DbPool,
  actor: Actor,
  orgId: string,
  endpointId: string,
  since: Date,
): Promise<{ redelivered: number } | GwError> {
  const first = await withEnabledEndpoint(db, orgId, endpointId, async (client) => {
    const { rows } = await client.query<{ until: string }>('SELECT now()::text AS until');
    const until = rows[0]!.until;
    const batch = await rewriteBatch(client, endpointId, until, {
      createdAt: since.toISOString(),
      id: '0', // (created_at, id) > (since, 0): created_at >= since, ids start at 1
    });
    const auditId = await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.redeliver',
      objectType: 'webhook',
      objectId: endpointId,
      details: { since: since.toISOString(), redelivered: batch.rewritten },
    });
    return { until, auditId, batch };
  });
  if (isGwError(first)) return first;
  const { until, auditId } = first;
  let { batch } = first;
  let redelivered = batch.rewritten;
  while (batch.full && batch.last) {
    const after = batch.last;
    try {
      const next = await withTransaction(db, async (client) => {
        if (!(await findEndpoint(client, orgId, endpointId, true))) return notFound();
        const rewritten = await rewriteBatch(client, endpointId, until, after);
        await client.query(
          `UPDATE dashboard_audit_log
              SET details = jsonb_set(details, '{redelivered}', to_jsonb($2::int))
            WHERE id = $1`,
          [auditId, redelivered + rewritten.rewritten],
        );
        return rewritten;
      });
      // Deleted meanwhile: its deliveries, the ones rewritten too, went with it.
      if (isGwError(next)) return next;
      batch = next;
    } catch (error) {
      if (!isDependencyUnavailable(error)) throw error;
      return gwError(
        'gw_unavailable',
        `redelivered ${redelivered} of the messages since ${since.toISOString()}, up to ` +
          `${after.createdAtMs}, before Postgres failed: redeliver since ${after.createdAtMs} ` +
          'for the rest (the messages of that millisecond go again)',
      );
    }
    redelivered += batch.rewritten;
  }
  return { redelivered };
}

/** Rewrites the next REDELIVERY_BATCH deliveries after `after`, made until `until`. */
async function rewriteBatch(
  client: DbClient,
  endpointId: string,
  until: string,
  after: RedeliveryCursor,
): Promise<RewrittenBatch> {
  // The UPDATE waits for a delivery an attempt holds (at most WEBHOOK_TIMEOUT_MS), then
  // rewrites what the attempt left, as an enabling does (566).
  const { rows } = await client.query<{
    rewritten: number;
    selected: number;
    created_at: string | null;
    created_at_ms: string | null;
    id: string | null;
  }>(
    `WITH batch AS (
       SELECT id, created_at FROM webhook_deliveries
        WHERE endpoint_id = $1 AND (created_at, id) > ($2::timestamptz, $3::bigint)
          AND created_at <= $4::timestamptz
        ORDER BY created_at, id
        LIMIT $5),
     rewritten AS (
       UPDATE webhook_deliveries d
          SET state = 'pending', retry_step = 0, next_attempt_at = now()
         FROM batch WHERE d.id = batch.id
       RETURNING d.id)
     SELECT (SELECT count(*)::int FROM rewritten) AS rewritten,
            (SELECT count(*)::int FROM batch) AS selected,
            last.created_at::text AS created_at,
            to_char(date_trunc('milliseconds', last.created_at) AT TIME ZONE 'UTC',
                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at_ms,
            last.id::text AS id
       FROM (SELECT 1) one
       LEFT JOIN (SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1) last
         ON true`,
    [endpointId, after.createdAt, after.id, until, REDELIVERY_BATCH],
  );
  const row = rows[0]!;
  return {
    rewritten: row.rewritten,
    full: row.selected === REDELIVERY_BATCH,
    last:
      row.created_at !== null && row.id !== null && row.created_at_ms !== null
        ? { createdAt: row.created_at, id: row.id, createdAtMs: row.created_at_ms }
        : null,
  };
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
