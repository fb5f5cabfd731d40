// Apps of an organization: the service the CLI and the dashboard API share. An app is deleted
// softly: its usage, product users and audit entries keep naming it, while its connections
// are revoked (their API keys and OAuth tokens stop on every instance); it leaves the app list
// and nothing new can be made under it.
import { recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { gwError, type GwError } from '../errors.js';
import { invalidateConnectionsKeys, markConnectionRevoked } from './connections.js';
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

/**
 * What an app's overview counts: its own organization's active connections and their working
 * API keys (connections other organizations made by OAuth consent are theirs), and the
 * product users it has seen.
 */
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
    return (await appById(client, id))!;
  });
}

/** An app (deleted ones too) and its counts, or null when there is none. */
export async function getApp(
  db: Pick<DbPool, 'query'>,
  id: string,
): Promise<{ row: AppRow; counts: AppCounts } | null> {
  const row = await appById(db, id);
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
    return (await appById(client, id))!;
  });
  if ('code' in renamed) return renamed;
  return { row: renamed, counts: await appCounts(db, id) };
}

/**
 * Deletes an app softly: marks it deleted (audited) and revokes each of its connections — its
 * own and those other organizations made by OAuth consent — with the one rule's writes for
 * revoking a connection, in the same transaction; once it commits their keys or tokens stop
 * on every instance at once. Deleting a deleted app revokes any connection still active, and
 * changes nothing else.
 */
export async function deleteAppAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  id: string,
): Promise<{ row: AppRow; counts: AppCounts } | null> {
  // The app and every connection of it in one transaction (decision 412): a failure half-way
  // leaves the app and all its keys working, never a deleted app whose keys still work.
  const deleted = await withTransaction(db, async (client) => {
    const locked = await lockedApp(client, id);
    if (!locked) return null;
    if (locked.status === 'active') {
      await client.query(`UPDATE apps SET status = 'deleted', deleted_at = now() WHERE id = $1`, [
        id,
      ]);
      await recordAudit(client, {
        orgId: locked.org_id,
        userId: actor.userId,
        action: 'app.delete',
        objectType: 'app',
        objectId: id,
        details: { name: locked.name },
      });
    }
    const { rows: connections } = await client.query<{ id: string; org_id: string }>(
      `SELECT id, org_id FROM app_connections WHERE app_id = $1 AND status = 'active'
        ORDER BY id FOR UPDATE`,
      [id],
    );
    for (const connection of connections) {
      // Another organization's audit log names the app, not a user it does not know.
      const by = connection.org_id === locked.org_id ? actor : { userId: id };
      await markConnectionRevoked(client, by, connection.id);
    }
    return { row: (await appById(client, id))!, connectionIds: connections.map((c) => c.id) };
  });
  if (!deleted) return null;
  // Once committed: every instance drops the revoked connections' keys from its cache.
  await invalidateConnectionsKeys(db, apiKeys, deleted.connectionIds);
  return { row: deleted.row, counts: await appCounts(db, id) };
}

/** The app (a deleted one too), or null when there is none. */
async function appById(client: Pick<DbPool, 'query'>, id: string): Promise<AppRow | null> {
  const { rows } = await client.query<AppRow>(`SELECT ${COLUMNS} FROM apps WHERE id = $1`, [id]);
  return rows[0] ?? null;
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
       (SELECT count(*) FROM app_connections
         WHERE app_id = $1 AND status = 'active'
           AND org_id = (SELECT org_id FROM apps WHERE id = $1))::text AS connections,
       (SELECT count(*) FROM api_keys k JOIN app_connections c ON c.id = k.app_connection_id
         WHERE c.app_id = $1 AND c.org_id = (SELECT org_id FROM apps WHERE id = $1)
           AND c.status = 'active' AND k.kind = 'api_key' AND k.status = 'active'
           AND (k.expires_at IS NULL OR k.expires_at > now()))::text AS api_keys,
       (SELECT count(*) FROM product_users
         WHERE org_id = (SELECT org_id FROM apps WHERE id = $1) AND app_id = $1)::text
         AS product_users`,
    [appId],
  );
  const row = rows[0]!;
  return {
    connections: Number(row.connections),
    api_keys: Number(row.api_keys),
    product_users: Number(row.product_users),
  };
}
