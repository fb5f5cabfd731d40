// Webhook endpoints of an organization: the one service the CLI (`gw webhook`) and the
// dashboard API share. Every change is audited in its transaction; a signing secret leaves this
// module once, in the answer to a creation or a rotation, and is stored sealed.
import { recordAudit, type Actor } from '../audit/audit.js';
import type { SecretBox } from '../credentials/secret-box.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { newId } from '../ids.js';
import { keptByRotation, stillRetiring } from '../retiring-secrets.js';
import { isEventType, type EventType } from './events.js';
import { openFromText, sealToText } from '../credentials/sealed-text.js';
import { newSigningSecret } from './signing.js';
import {
  checkTargetAddresses,
  checkTargetUrl,
  type Resolver,
  type TargetPolicy,
} from './target-policy.js';

/** What the service needs besides the database. */
export interface WebhookSettings {
  readonly policy: TargetPolicy;
  /** Seals signing secrets (the credentials master key); none: endpoints cannot be created. */
  readonly box: SecretBox | undefined;
  /** DNS for the creation-time address check (the system resolver by default). */
  readonly resolve?: Resolver;
}

export const MAX_ENDPOINTS_PER_ORG = 20;
export const MAX_DESCRIPTION_CHARS = 500;
/** How long the old secret keeps signing after a rotation: 24 h by default, 7 days at most. */
export { DEFAULT_ROTATION_GRACE_S, MAX_ROTATION_GRACE_S } from '../retiring-secrets.js';

/** A secret retired before the last rotation that signs until `expires_at` (RFC 3339). */
export interface EarlierSecret {
  readonly sealed: string;
  readonly expires_at: string;
}

export interface EndpointRow {
  readonly id: string;
  readonly org_id: string;
  readonly url: string;
  readonly description: string;
  readonly event_types: string[];
  readonly status: 'enabled' | 'disabled';
  readonly disabled_reason: 'manual' | 'failing' | 'gone' | null;
  readonly disabled_at: Date | null;
  readonly secret_sealed: string;
  readonly previous_secret_sealed: string | null;
  readonly previous_secret_expires_at: Date | null;
  /** Retired before the last rotation, oldest first (those past their grace may linger). */
  readonly earlier_secrets: readonly EarlierSecret[];
  readonly failing_since: Date | null;
  readonly last_success_at: Date | null;
  readonly created_at: Date;
  readonly updated_at: Date;
}

export const ENDPOINT_COLUMNS = `e.id, e.org_id, e.url, e.description, e.event_types, e.status,
  e.disabled_reason, e.disabled_at, e.secret_sealed, e.previous_secret_sealed,
  e.previous_secret_expires_at, e.earlier_secrets, s.failing_since, s.last_success_at, e.created_at, e.updated_at`;
const FROM_ENDPOINTS = `webhook_endpoints e LEFT JOIN webhook_endpoint_states s ON s.endpoint_id = e.id`;

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/** The retired secrets that still sign at `nowMs`, oldest first: the earlier ones, then the previous. */
function retiringSecrets(row: EndpointRow, nowMs: number): EarlierSecret[] {
  const retiring = stillRetiring(row.earlier_secrets, nowMs);
  if (
    row.previous_secret_sealed &&
    row.previous_secret_expires_at &&
    row.previous_secret_expires_at.getTime() > nowMs
  ) {
    retiring.push({
      sealed: row.previous_secret_sealed,
      expires_at: row.previous_secret_expires_at.toISOString(),
    });
  }
  return retiring;
}

/** An endpoint as the dashboard and the CLI show it: never its secret. */
export function endpointView(row: EndpointRow, now = Date.now()): Record<string, unknown> {
  const rollover =
    row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > now
      ? row.previous_secret_expires_at
      : null;
  return {
    id: row.id,
    org_id: row.org_id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    status: row.status,
    disabled_reason: row.disabled_reason,
    disabled_at: iso(row.disabled_at),
    failing_since: iso(row.failing_since),
    last_success_at: iso(row.last_success_at),
    previous_secret_expires_at: iso(rollover),
    earlier_secrets_expire_at: row.earlier_secrets
      .map((secret) => secret.expires_at)
      .filter((expiresAt) => Date.parse(expiresAt) > now),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The secrets that sign an attempt now: the current one, and every retired one in its grace. */
export function signingSecrets(box: SecretBox, row: EndpointRow, nowMs: number): string[] {
  return [
    openFromText(box, row.secret_sealed),
    ...retiringSecrets(row, nowMs)
      .reverse()
      .map((secret) => openFromText(box, secret.sealed)),
  ];
}

export async function listEndpoints(db: DbPool, orgId: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM ${FROM_ENDPOINTS} WHERE e.org_id = $1
      ORDER BY e.created_at, e.id`,
    [orgId],
  );
  return rows;
}

/**
 * The endpoint if it belongs to the organization (anything else reads as missing). `lock`:
 * against another change and its deletion until the transaction ends, but not against the
 * organization's events: the outbox takes its endpoints FOR KEY SHARE, which FOR UPDATE would
 * make wait behind an enabling that waits itself, for an attempt in flight or on its backlog
 * (decision 548).
 */
export async function findEndpoint(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  endpointId: string,
  lock = false,
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM ${FROM_ENDPOINTS} WHERE e.id = $1 AND e.org_id = $2
     ${lock ? 'FOR NO KEY UPDATE OF e' : ''}`,
    [endpointId, orgId],
  );
  return rows[0];
}

/** The organization an endpoint belongs to (for the CLI, which names endpoints by id). */
export async function endpointOrg(db: DbPool, endpointId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ org_id: string }>(
    'SELECT org_id FROM webhook_endpoints WHERE id = $1',
    [endpointId],
  );
  return rows[0]?.org_id;
}

export const notFound = (): GwError => gwError('gw_not_found', 'no webhook endpoint with this id');

/** Checks a URL for an endpoint: form, scheme and where its host resolves. */
async function checkUrl(settings: WebhookSettings, url: string): Promise<string | GwError> {
  const parsed = checkTargetUrl(url, settings.policy);
  const reason =
    typeof parsed === 'string'
      ? parsed
      : await checkTargetAddresses(parsed, settings.policy, settings.resolve);
  if (reason !== null) return gwError('gw_webhook_url_not_allowed', `url: ${reason}`);
  return (parsed as URL).href;
}

/** Event filter names must be in the catalogue; duplicates are dropped, order kept. */
function eventFilter(types: readonly string[]): EventType[] | GwError {
  const unknown = types.find((type) => !isEventType(type));
  if (unknown !== undefined) {
    return gwError(
      'gw_invalid_request',
      `event_types: ${JSON.stringify(unknown).slice(0, 80)} is not an event type (docs/webhooks.md)`,
    );
  }
  return [...new Set(types)] as EventType[];
}

function requireBox(settings: WebhookSettings): SecretBox | GwError {
  return (
    settings.box ??
    gwError(
      'gw_unavailable',
      'webhook signing secrets are encrypted with CREDENTIALS_MASTER_KEY, which is not set here (the gateway and the gw CLI each need it)',
    )
  );
}

export interface NewEndpoint {
  readonly url: string;
  readonly description?: string | undefined;
  readonly eventTypes?: readonly string[] | undefined;
}

/** Creates an endpoint; its signing secret is in the answer only. */
export async function createEndpoint(
  db: DbPool,
  settings: WebhookSettings,
  actor: Actor,
  orgId: string,
  input: NewEndpoint,
): Promise<{ row: EndpointRow; secret: string } | GwError> {
  const box = requireBox(settings);
  if ('code' in box) return box;
  const url = await checkUrl(settings, input.url);
  if (typeof url !== 'string') return url;
  const eventTypes = eventFilter(input.eventTypes ?? []);
  if ('code' in eventTypes) return eventTypes;
  const secret = newSigningSecret();
  return withTransaction(db, async (client) => {
    // One creation at a time per organization, so the limit holds.
    await client.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
    const { rows: counted } = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1',
      [orgId],
    );
    if (counted[0]!.n >= MAX_ENDPOINTS_PER_ORG) {
      return gwError(
        'gw_conflict',
        `an organization has at most ${MAX_ENDPOINTS_PER_ORG} webhook endpoints: delete one first`,
      );
    }
    const id = newId('wh');
    await client.query(
      `INSERT INTO webhook_endpoints (id, org_id, url, description, event_types, secret_sealed)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [id, orgId, url, input.description ?? '', eventTypes, sealToText(box, secret)],
    );
    await client.query('INSERT INTO webhook_endpoint_states (endpoint_id) VALUES ($1)', [id]);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.create',
      objectType: 'webhook',
      objectId: id,
      details: { url, description: input.description ?? '', event_types: eventTypes },
    });
    return { row: (await findEndpoint(client, orgId, id))!, secret };
  });
}

export interface EndpointChange {
  readonly url?: string | undefined;
  readonly description?: string | undefined;
  readonly eventTypes?: readonly string[] | undefined;
  /** false: disabled by a person; true: enabled again (its failure history forgotten). */
  readonly enabled?: boolean | undefined;
}

export async function updateEndpoint(
  db: DbPool,
  settings: WebhookSettings,
  actor: Actor,
  orgId: string,
  endpointId: string,
  change: EndpointChange,
): Promise<EndpointRow | GwError> {
  const url = change.url === undefined ? undefined : await checkUrl(settings, change.url);
  if (url !== undefined && typeof url !== 'string') return url;
  const eventTypes = change.eventTypes === undefined ? undefined : eventFilter(change.eventTypes);
  if (eventTypes !== undefined && 'code' in eventTypes) return eventTypes;
  return withTransaction(db, async (client) => {
    const before = await findEndpoint(client, orgId, endpointId, true);
    if (!before) return notFound();
    const enabling = change.enabled === true && before.status === 'disabled';
    const disabling = change.enabled === false && before.status === 'enabled';
    await client.query(
      `UPDATE webhook_endpoints SET
         url = COALESCE($2, url),
         description = COALESCE($3, description),
         event_types = COALESCE($4, event_types),
         status = CASE WHEN $5 THEN 'enabled' WHEN $6 THEN 'disabled' ELSE status END,
         disabled_reason = CASE WHEN $5 THEN NULL WHEN $6 THEN 'manual' ELSE disabled_reason END,
         disabled_at = CASE WHEN $5 THEN NULL WHEN $6 THEN now() ELSE disabled_at END,
         updated_at = now()
       WHERE id = $1`,
      [
        endpointId,
        url ?? null,
        change.description ?? null,
        eventTypes ?? null,
        enabling,
        disabling,
      ],
    );
    // Another receiver (decision 556), or the same one enabled again (decision 503): a fresh
    // start. The days the endpoint failed do not count against it again, and what waited for
    // the old receiver, or while it was disabled, goes now (decision 566).
    if (enabling || (url !== undefined && url !== before.url)) {
      await restartBacklog(client, endpointId);
    }
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.update',
      objectType: 'webhook',
      objectId: endpointId,
      details: {
        ...(url !== undefined && { url }),
        ...(change.description !== undefined && { description: change.description }),
        ...(eventTypes !== undefined && { event_types: eventTypes }),
        ...(change.enabled !== undefined && { enabled: change.enabled }),
      },
    });
    return (await findEndpoint(client, orgId, endpointId))!;
  });
}

/**
 * Restarts an endpoint's failing window and sends what waited for it now, each message from
 * the start of its schedule (decision 503): left as it was, a message of a receiver down for
 * days waited up to 12 h more for its next step. So do the messages whose schedule ran out
 * since it began failing (with no success since): the receiver was down for all of them. The
 * statement's snapshot reads failing_since as it was before this clears it. Only deliveries
 * already tried are rewritten (webhook_deliveries_tried): those queued while it was disabled
 * are due and on their first step, and may be weeks of messages (decision 549). A pending one
 * on its first step and not yet due is one a retry put off (a "not sent", 506): due now.
 * Run by an enabling and by a change of URL (decision 566), in their transaction.
 */
async function restartBacklog(client: DbClient, endpointId: string): Promise<void> {
  await client.query(
    `WITH state AS (
       UPDATE webhook_endpoint_states SET failing_since = NULL WHERE endpoint_id = $1),
     tried AS (
       UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = now(), retry_step = 0
        WHERE endpoint_id = $1 AND retry_step > 0 AND state <> 'delivered'
          AND (state = 'pending'
               OR last_attempt_at >= (
                    SELECT failing_since FROM webhook_endpoint_states WHERE endpoint_id = $1)))
     UPDATE webhook_deliveries SET next_attempt_at = now()
      WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at > now()
        AND retry_step = 0`,
    [endpointId],
  );
}

/** Deliveries deleted per statement before an endpoint goes (with their attempts). */
const DELETE_CHUNK = 5_000;

/**
 * Deletes an endpoint with its delivery log. False when there is none.
 *
 * The log goes first, a chunk at a time, each its own statement (deliveries an attempt holds
 * are left to the end): weeks of messages that waited for a disabled endpoint (decision 504)
 * made one cascading delete last past DATABASE_TIMEOUT_MS, and for as long it held the
 * endpoint's row, which every event of the organization waits for (the outbox takes it FOR
 * KEY SHARE). The endpoint's own delete then takes only what came since (decision 551). A
 * deletion that fails after its first chunks leaves the endpoint with part of its log gone:
 * the person deleting it meant it all to go.
 */
export async function deleteEndpoint(
  db: DbPool,
  actor: Actor,
  orgId: string,
  endpointId: string,
): Promise<boolean> {
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.endpoint_id = $1 AND e.org_id = $2
          ORDER BY d.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED)`,
      [endpointId, orgId, DELETE_CHUNK],
    );
    if ((rowCount ?? 0) < DELETE_CHUNK) break;
  }
  return withTransaction(db, async (client) => {
    // The endpoint's lanes first (docs/decisions.md 317): each lane waits for its attempt in
    // flight, and a lane held here is claimed by no one after. Without it the delete waits on
    // the state row, which the lanes' claims share (FOR KEY SHARE): a shared lock is granted
    // past a waiting delete, so the delete waited until the lanes had sent the whole backlog.
    // The idle lanes at once, then each one in flight (a lane not yet held could be claimed
    // again meanwhile: the wait is at most one attempt per lane in flight).
    for (const wait of ['SKIP LOCKED', '']) {
      await client.query(
        `SELECT 1 FROM webhook_endpoint_lanes l JOIN webhook_endpoints e ON e.id = l.endpoint_id
          WHERE e.id = $1 AND e.org_id = $2
          ORDER BY l.lane FOR UPDATE OF l ${wait}`,
        [endpointId, orgId],
      );
    }
    // What is left of the log (held by attempts until now, or queued since) before the row:
    // a wait here holds nothing the organization's events need.
    await client.query(
      `DELETE FROM webhook_deliveries d USING webhook_endpoints e
        WHERE d.endpoint_id = $1 AND e.id = d.endpoint_id AND e.org_id = $2`,
      [endpointId, orgId],
    );
    const { rowCount } = await client.query(
      'DELETE FROM webhook_endpoints WHERE id = $1 AND org_id = $2',
      [endpointId, orgId],
    );
    if (rowCount === 0) return false;
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.delete',
      objectType: 'webhook',
      objectId: endpointId,
    });
    return true;
  });
}

/**
 * A new signing secret (in the answer only). The old one keeps signing beside it for
 * `graceSeconds`, and the secrets retired before it keep signing until their own grace ends
 * (at most MAX_RETIRING_SECRETS at once: one more is 409); 0 stops every old secret at once
 * (a leaked secret).
 */
export async function rotateSecret(
  db: DbPool,
  settings: WebhookSettings,
  actor: Actor,
  orgId: string,
  endpointId: string,
  graceSeconds: number,
): Promise<{ row: EndpointRow; secret: string } | GwError> {
  const box = requireBox(settings);
  if ('code' in box) return box;
  const secret = newSigningSecret();
  return withTransaction(db, async (client) => {
    const before = await findEndpoint(client, orgId, endpointId, true);
    if (!before) return notFound();
    const earlier = keptByRotation(retiringSecrets(before, Date.now()), graceSeconds, 'sign');
    if ('refusal' in earlier) return gwError('gw_conflict', earlier.refusal);
    await client.query(
      `UPDATE webhook_endpoints SET
         previous_secret_sealed = CASE WHEN $3 > 0 THEN secret_sealed END,
         previous_secret_expires_at = CASE WHEN $3 > 0 THEN now() + $3 * interval '1 second' END,
         earlier_secrets = $4::jsonb,
         secret_sealed = $2,
         updated_at = now()
       WHERE id = $1`,
      [endpointId, sealToText(box, secret), graceSeconds, JSON.stringify(earlier)],
    );
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'webhook.rotate_secret',
      objectType: 'webhook',
      objectId: endpointId,
      details: { grace_seconds: graceSeconds },
    });
    return { row: (await findEndpoint(client, orgId, endpointId))!, secret };
  });
}

export const disabledRefusal = (): GwError =>
  gwError('gw_conflict', 'the webhook endpoint is disabled: enable it first');
