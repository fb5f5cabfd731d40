// Service keys of an organization (gw_svc_…, for the product-user management API): the one
// service the CLI (`gw service-key`) and the dashboard API share. The raw key leaves this
// module once, in the answer to its creation; it is never logged or audited. A status change
// drops every instance's service-key cache: this instance's at once, the others' over pub/sub.
import { changeAudited, recordAudit, type Actor } from '../audit/audit.js';
import type { InvalidationPublisher } from '../cache/invalidation.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { createServiceKey, SERVICE_KEY_SCOPES } from './provisioning.js';

export type ServiceKeyScopeName = (typeof SERVICE_KEY_SCOPES)[number];

export interface ServiceKeyRow {
  readonly id: string;
  readonly org_id: string;
  readonly key_hint: string;
  readonly scopes: string[];
  readonly status: 'active' | 'revoked' | 'disabled';
  readonly expires_at: Date | null;
  readonly created_at: Date;
  readonly cursor_us: string;
}

/** Makes every instance forget its cached service keys. */
export interface ServiceKeyInvalidation {
  invalidate(): Promise<void>;
}

/** Clears this instance's cache (when it has one) and tells the others over pub/sub. */
export function serviceKeyInvalidation(
  invalidations: InvalidationPublisher,
): ServiceKeyInvalidation {
  return { invalidate: () => invalidations.publish({ kind: 'service-keys' }) };
}

const COLUMNS = `id, org_id, key_hint, scopes, status, expires_at, created_at, ${CURSOR_COLUMN}`;

/** What the dashboard shows of a service key: its hint, never the key. */
export function serviceKeyView(row: ServiceKeyRow, now = Date.now()): Record<string, unknown> {
  const expired = row.expires_at !== null && row.expires_at.getTime() <= now;
  return {
    id: row.id,
    org_id: row.org_id,
    key_hint: row.key_hint,
    scopes: row.scopes,
    status: row.status === 'active' && expired ? 'expired' : row.status,
    expires_at: row.expires_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

export function listServiceKeys(
  db: DbPool,
  orgId: string,
  page: PageRequest,
): Promise<Page<ServiceKeyRow>> {
  const select = `SELECT ${COLUMNS} FROM service_keys`;
  return readPage(db, { select, where: 'org_id = $1', params: [orgId] }, page);
}

/** Issues a service key; its raw value is in the answer only. */
export async function createServiceKeyAs(
  db: DbPool,
  actor: Actor,
  orgId: string,
  settings: { readonly scopes?: readonly string[]; readonly expiresAt?: Date | null },
): Promise<{ row: ServiceKeyRow; rawKey: string } | GwError> {
  const scopes = [...new Set(settings.scopes ?? SERVICE_KEY_SCOPES)];
  const unknown = scopes.filter(
    (scope) => !(SERVICE_KEY_SCOPES as readonly string[]).includes(scope),
  );
  if (unknown.length > 0) {
    return gwError(
      'gw_invalid_request',
      `scopes: unknown scopes ${unknown.join(', ')} (known: ${SERVICE_KEY_SCOPES.join(', ')})`,
    );
  }
  if (scopes.length === 0) return gwError('gw_invalid_request', 'scopes: must name a scope');
  const expiresAt = settings.expiresAt ?? null;
  return withTransaction(db, async (client) => {
    const key = await createServiceKey(client, orgId, scopes, expiresAt);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'service_key.create',
      objectType: 'service_key',
      objectId: key.id,
      details: { scopes, expires_at: expiresAt?.toISOString() ?? null },
    });
    return { row: (await serviceKeyById(client, key.id))!, rawKey: key.rawKey };
  });
}

/**
 * Revokes (for good) or disables a service key. A revoked key stays revoked; null when there
 * is no such key. Every instance refuses it at once.
 */
export async function setServiceKeyStatusAs(
  db: DbPool,
  invalidation: ServiceKeyInvalidation,
  actor: Actor,
  keyId: string,
  status: 'revoked' | 'disabled',
): Promise<ServiceKeyRow | null> {
  const row = await withTransaction(db, async (client) => {
    await changeAudited(
      client,
      `UPDATE service_keys SET status = $2
        WHERE id = $1 AND status <> 'revoked' AND status <> $2 RETURNING org_id`,
      [keyId, status],
      {
        userId: actor.userId,
        action: status === 'revoked' ? 'service_key.revoke' : 'service_key.disable',
        objectType: 'service_key',
        objectId: keyId,
      },
    );
    return serviceKeyById(client, keyId);
  });
  if (row) await invalidation.invalidate();
  return row;
}

/** The key, or null when there is none. */
async function serviceKeyById(
  client: Pick<DbPool, 'query'>,
  id: string,
): Promise<ServiceKeyRow | null> {
  const { rows } = await client.query<ServiceKeyRow>(
    `SELECT ${COLUMNS} FROM service_keys WHERE id = $1`,
    [id],
  );
  return rows[0] ?? null;
}
