// Apps of an organization: the service the CLI and the dashboard API share. An app is deleted
// softly: its usage, product users and audit entries keep naming it, while its connections
// are revoked and its API keys stop working on every instance; it leaves the app list and
// nothing new can be made under it.
import { recordAudit } from '../audit/audit.js';
import type { ApiKeyStore } from '../auth/api-key-store.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { gwError, type GwError } from '../errors.js';
import { createApp } from './provisioning.js';

export interface AppRow {
  readonly id: string;
  readonly org_id: string;
  readonly name: string;
  readonly status: 'active' | 'deleted';
  readonly created_at: Date;
  readonly deleted_at: Date | null;
  readonly cursor_us: string;
}

export interface Actor {
  readonly userId: string;
}

/** What an app's overview counts: active connections and keys, product users ever seen. */
export interface AppCounts {
  readonly connections: number;
  readonly api_keys: number;
  readonly product_users: number;
}

const COLUMNS = `id, org_id, name, status, created_at, deleted_at, ${CURSOR_COLUMN}`;

export function appView(row: AppRow): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    created_at: row.created_at.toISOString(),
  };
}

/** One app with its status and counts (the dashboard's app page). */
export function appDetailView(row: AppRow, counts: AppCounts): Record<string, unknown> {
  return {
    ...appView(row),
    status: row.status,
    deleted_at: row.deleted_at?.toISOString() ?? null,
    counts,
  };
}

/** The organization's apps that are not deleted, oldest first. */
export function listApps(db: DbPool, orgId: string, page: PageRequest): Promise<Page<AppRow>> {
  const select = `SELECT ${COLUMNS} FROM apps`;
  return readPage(
    db,
    { select, where: `org_id = $1 AND status = 'active'`, params: [orgId] },
    page,
  );
}

/** Creates an app, recording who did it in the audit log (same transaction). */
export async function createAppAs(
  db: DbPool,
  actor: Actor,
  orgId: string,
  name: string,
): Promise<AppRow> {
  return withTransaction(db, async (client) => {
    const id = await createApp(client, orgId, name);
    await recordAudit(client, {
      orgId,
      userId: actor.userId,
      action: 'app.create',
      objectType: 'app',
      objectId: id,
      details: { name },
    });
    return appById(client, id);
  });
}

/** An app (deleted ones too) and its counts, or null when there is none. */
export async function getApp(
  db: Pick<DbPool, 'query'>,
  id: string,
): Promise<{ row: AppRow; counts: AppCounts } | null> {
  const { rows } = await db.query<AppRow>(`SELECT ${COLUMNS} FROM apps WHERE id = $1`, [id]);
  const row = rows[0];
  if (!row) return null;
  return { row, counts: await appCounts(db, id) };
}

/** Renames an app (not a deleted one: 409). */
export async function renameAppAs(
  db: DbPool,
  actor: Actor,
  id: string,
  name: string,
): Promise<{ row: AppRow; counts: AppCounts } | GwError> {
  const renamed = await withTransaction(db, async (client) => {
    const locked = await lockedApp(client, id);
    if (!locked) return gwError('gw_not_found', `no app ${id}`);
    if (locked.status === 'deleted') return gwError('gw_conflict', 'the app is deleted');
    await client.query('UPDATE apps SET name = $2 WHERE id = $1', [id, name]);
    await recordAudit(client, {
      orgId: locked.org_id,
      userId: actor.userId,
      action: 'app.rename',
      objectType: 'app',
      objectId: id,
      details: { name, previous_name: locked.name },
    });
    return appById(client, id);
  });
  if ('code' in renamed) return renamed;
  return { row: renamed, counts: await appCounts(db, id) };
}

/**
 * Deletes an app softly: marks it deleted, revokes its active connections and API keys (in
 * one transaction, audited), then drops the keys from every instance's cache. Deleting a
 * deleted app changes nothing and answers it as it is.
 */
export async function deleteAppAs(
  db: DbPool,
  apiKeys: Pick<ApiKeyStore, 'invalidate'>,
  actor: Actor,
  id: string,
): Promise<{ row: AppRow; counts: AppCounts } | null> {
  const outcome = await withTransaction(db, async (client) => {
    const locked = await lockedApp(client, id);
    if (!locked) return null;
    if (locked.status === 'deleted') return { row: locked, keyHashes: [] as string[] };
    await client.query(`UPDATE apps SET status = 'deleted', deleted_at = now() WHERE id = $1`, [
      id,
    ]);
    const connections = await client.query<{ id: string }>(
      `UPDATE app_connections SET status = 'revoked', updated_at = now()
        WHERE app_id = $1 AND status = 'active' RETURNING id`,
      [id],
    );
    const keys = await client.query<{ key_hash: string }>(
      `UPDATE api_keys SET status = 'revoked', revoked_at = now()
        WHERE app_connection_id IN (SELECT id FROM app_connections WHERE app_id = $1)
          AND status = 'active'
        RETURNING key_hash`,
      [id],
    );
    await recordAudit(client, {
      orgId: locked.org_id,
      userId: actor.userId,
      action: 'app.delete',
      objectType: 'app',
      objectId: id,
      details: {
        name: locked.name,
        revoked_connections: connections.rowCount ?? 0,
        revoked_api_keys: keys.rowCount ?? 0,
      },
    });
    return { row: await appById(client, id), keyHashes: keys.rows.map((key) => key.key_hash) };
  });
  if (!outcome) return null;
  for (const keyHash of outcome.keyHashes) await apiKeys.invalidate(keyHash);
  return { row: outcome.row, counts: await appCounts(db, id) };
}

async function appById(client: Pick<DbPool, 'query'>, id: string): Promise<AppRow> {
  const { rows } = await client.query<AppRow>(`SELECT ${COLUMNS} FROM apps WHERE id = $1`, [id]);
  return rows[0]!;
}

async function lockedApp(client: Pick<DbPool, 'query'>, id: string): Promise<AppRow | undefined> {
  const { rows } = await client.query<AppRow>(
    `SELECT ${COLUMNS} FROM apps WHERE id = $1 FOR NO KEY UPDATE`,
    [id],
  );
  return rows[0];
}

/**
 * Active connections, API keys that still work (not revoked, not past a rotation's grace)
 * and product users of the app: three index scans, no scan of the ledger.
 */
async function appCounts(db: Pick<DbPool, 'query'>, appId: string): Promise<AppCounts> {
  const { rows } = await db.query<{ connections: string; api_keys: string; product_users: string }>(
    `SELECT
       (SELECT count(*) FROM app_connections WHERE app_id = $1 AND status = 'active')::text
         AS connections,
       (SELECT count(*) FROM api_keys k JOIN app_connections c ON c.id = k.app_connection_id
         WHERE c.app_id = $1 AND k.status = 'active'
           AND (k.expires_at IS NULL OR k.expires_at > now()))::text AS api_keys,
       (SELECT count(*) FROM product_users WHERE app_id = $1)::text AS product_users`,
    [appId],
  );
  const row = rows[0]!;
  return {
    connections: Number(row.connections),
    api_keys: Number(row.api_keys),
    product_users: Number(row.product_users),
  };
}
