// Redelivery of every message an endpoint was sent since a time (decision 577): the range is
// rewritten in batches, each its own short transaction, so a range of months neither runs past
// DATABASE_TIMEOUT_MS nor holds the dispatchers off its deliveries until it ends.
import { recordAudit, type Actor } from '../audit/audit.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, isDependencyUnavailable, isGwError, type GwError } from '../errors.js';
import { disabledRefusal, findEndpoint, notFound } from './endpoints.js';

/**
 * Deliveries one transaction rewrites: a short statement (tens of ms), so none nears
 * DATABASE_TIMEOUT_MS, and a dispatcher waits for one batch at most, never the whole range.
 */
export const REDELIVERY_BATCH = 1000;

/** The last delivery a batch went through, in the walk's (created_at, id) order. */
interface Cursor {
  /** created_at as Postgres writes it (text: microseconds, which a Date would lose). */
  readonly createdAt: string;
  readonly id: string;
  /** created_at to the millisecond below, RFC 3339: a `since` that goes on from here. */
  readonly createdAtMs: string;
}

interface Batch {
  readonly rewritten: number;
  /** Whether the batch was full: more may follow it. */
  readonly full: boolean;
  /** Its last delivery; null when it had none (the range is done). */
  readonly last: Cursor | null;
  /** Deliveries an attempt in flight held, left for the end: their ids and messages. */
  readonly held: ReadonlyArray<{ readonly id: string; readonly message_id: string }>;
}

/**
 * Queues every delivery of the endpoint made from `since` until the call began again, from the
 * start of its schedule: REDELIVERY_BATCH at a time, each batch its own transaction, in
 * (created_at, id) order from where the last ended (index webhook_deliveries_created_id: one
 * transaction's messages share a created_at, and a batch may end among them). The first
 * transaction checks the endpoint (404, 409) and writes the call's one audit entry; each later
 * one locks the endpoint as the first did (548) and sets that entry's count to what is
 * committed, so the log and the deliveries agree after every batch. A delivery an attempt
 * holds is passed by and rewritten at the end, after the attempt (566's rule, without holding a
 * batch meanwhile). Deliveries made after the call began are new and pending anyway: not
 * walked (an endpoint sent messages faster than batches go would keep the call running). If
 * Postgres fails after a batch committed, the 503 says how far it got and how to go on: the same
 * request again would queue, and send once more, what was done.
 */
export async function redeliverSince(
  db: DbPool,
  actor: Actor,
  orgId: string,
  endpointId: string,
  since: Date,
): Promise<{ redelivered: number } | GwError> {
  const first = await withTransaction(db, async (client) => {
    const endpoint = await findEndpoint(client, orgId, endpointId, true);
    if (!endpoint) return notFound();
    if (endpoint.status !== 'enabled') return disabledRefusal();
    const { rows } = await client.query<{ until: string }>('SELECT now()::text AS until');
    const until = rows[0]!.until;
    // (created_at, id) > (since, 0) is created_at >= since: ids start at 1.
    const batch = await rewriteBatch(client, endpointId, until, {
      createdAt: since.toISOString(),
      id: '0',
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
  const held = [...batch.held];
  /** One more transaction of the call: the endpoint locked, the audit entry's count kept. */
  const step = <T extends { readonly rewritten: number }>(
    work: (client: DbClient) => Promise<T>,
  ): Promise<T | GwError> =>
    withTransaction(db, async (client) => {
      // Deleted meanwhile: its deliveries, the ones rewritten too, went with it.
      if (!(await findEndpoint(client, orgId, endpointId, true))) return notFound();
      const done = await work(client);
      await client.query(
        `UPDATE dashboard_audit_log
            SET details = jsonb_set(details, '{redelivered}', to_jsonb($2::int))
          WHERE id = $1`,
        [auditId, redelivered + done.rewritten],
      );
      return done;
    });
  while (batch.full && batch.last) {
    const after = batch.last;
    try {
      const next = await step((client) => rewriteBatch(client, endpointId, until, after));
      if (isGwError(next)) return next;
      batch = next;
    } catch (error) {
      if (!isDependencyUnavailable(error)) throw error;
      return cutOff(redelivered, since, after, held);
    }
    redelivered += batch.rewritten;
    held.push(...batch.held);
  }
  if (held.length > 0) {
    try {
      const rest = await step(async (client) => {
        // Waits for the attempts (at most WEBHOOK_TIMEOUT_MS each), then rewrites what they left.
        const { rowCount } = await client.query(
          `UPDATE webhook_deliveries
              SET state = 'pending', retry_step = 0, next_attempt_at = now()
            WHERE endpoint_id = $1 AND id = ANY ($2::bigint[])`,
          [endpointId, held.map((delivery) => delivery.id)],
        );
        return { rewritten: rowCount ?? 0 };
      });
      if (isGwError(rest)) return rest;
      redelivered += rest.rewritten;
    } catch (error) {
      if (!isDependencyUnavailable(error)) throw error;
      return cutOff(redelivered, since, null, held);
    }
  }
  return { redelivered };
}

/** The 503 of a call Postgres cut off after some of it committed: what to send to go on. */
function cutOff(
  redelivered: number,
  since: Date,
  after: Cursor | null,
  held: Batch['held'],
): GwError {
  const rest = [
    ...(after
      ? [`since ${after.createdAtMs} for the rest (the messages of that millisecond go again)`]
      : []),
    ...(held.length > 0
      ? [
          `by message_id ${held.map((delivery) => delivery.message_id).join(', ')} (an attempt held them)`,
        ]
      : []),
  ];
  return gwError(
    'gw_unavailable',
    `redelivered ${redelivered} of the messages since ${since.toISOString()}` +
      (after ? `, up to ${after.createdAtMs},` : '') +
      ` before Postgres failed: redeliver ${rest.join(' and ')}`,
  );
}

/**
 * Rewrites the next REDELIVERY_BATCH deliveries after `after`, made until `until`, but those an
 * attempt holds (its transaction holds the delivery's row while it sends): returned as held.
 */
async function rewriteBatch(
  client: DbClient,
  endpointId: string,
  until: string,
  after: Pick<Cursor, 'createdAt' | 'id'>,
): Promise<Batch> {
  const { rows } = await client.query<{
    rewritten: number;
    selected: number;
    created_at: string | null;
    created_at_ms: string | null;
    id: string | null;
    held: Array<{ id: string; message_id: string }>;
  }>(
    `WITH batch AS (
       SELECT id, created_at, message_id FROM webhook_deliveries
        WHERE endpoint_id = $1 AND (created_at, id) > ($2::timestamptz, $3::bigint)
          AND created_at <= $4::timestamptz
        ORDER BY created_at, id
        LIMIT $5),
     free AS (
       SELECT d.id FROM webhook_deliveries d JOIN batch USING (id)
          FOR NO KEY UPDATE OF d SKIP LOCKED),
     rewritten AS (
       UPDATE webhook_deliveries d
          SET state = 'pending', retry_step = 0, next_attempt_at = now()
         FROM free WHERE d.id = free.id
       RETURNING d.id)
     SELECT (SELECT count(*)::int FROM rewritten) AS rewritten,
            (SELECT count(*)::int FROM batch) AS selected,
            last.created_at::text AS created_at,
            to_char(date_trunc('milliseconds', last.created_at) AT TIME ZONE 'UTC',
                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at_ms,
            last.id::text AS id,
            COALESCE((SELECT json_agg(json_build_object('id', id::text, 'message_id', message_id))
                        FROM batch WHERE id NOT IN (SELECT id FROM free)), '[]') AS held
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
    held: row.held,
  };
}
