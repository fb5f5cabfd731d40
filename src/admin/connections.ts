// App connections: the service the dashboard API (and the seed) share. A connection carries
// the settings that govern its product users; API keys hang off it. Changing a connection's
// settings or revoking it reaches every instance's key cache at once.
import { recordAudit } from '../audit/audit.js';
import type { ApiKeyStore } from '../auth/api-key-store.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { createAppConnection } from './provisioning.js';
import type { Actor } from './apps.js';

export interface ConnectionRow {
  readonly id: string;
  readonly org_id: string;
  readonly app_id: string;
  readonly name: string;
  readonly status: 'active' | 'revoked';
  readonly requires_product_user: boolean;
  readonly credit_mode: 'enforce' | 'track_only' | 'disabled';
  readonly overrun_policy: 'limit_output' | 'reject';
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly cursor_us: string;
}

export interface ConnectionSettings {
  readonly name?: string;
  readonly requires_product_user?: boolean;
  readonly credit_mode?: ConnectionRow['credit_mode'];
  readonly overrun_policy?: ConnectionRow['overrun_policy'];
}

export function connectionView(row: ConnectionRow): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.org_id,
    app_id: row.app_id,
    name: row.name,
    status: row.status,
    requires_product_user: row.requires_product_user,
    credit_mode: row.credit_mode,
    overrun_policy: row.overrun_policy,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const COLUMNS = `id, org_id, app_id, name, status, requires_product_user, credit_mode, overrun_policy,
  created_at, updated_at, ${CURSOR_COLUMN}`;

export function listConnections(
  db: DbPool,
  appId: string,
  page: PageRequest,
): Promise<Page<ConnectionRow>> {
  const select = `SELECT ${COLUMNS} FROM app_connections`;
  return readPage(db, { select, where: 'app_id = $1', params: [appId] }, page);
}

export async function createConnectionAs(
  db: DbPool,
  actor: Actor,
  app: { orgId: string; appId: string },
  settings: ConnectionSettings & { name: string },
): Promise<ConnectionRow | GwError> {
  return withTransaction(db, async (client) => {
    const { rows } = await client.query<{ status: string }>(
      'SELECT status FROM apps WHERE id = $1 FOR SHARE',
      [app.appId],
    );
    if (rows[0]?.status !== 'active') {
      return gwError('gw_conflict', 'the app is deleted: it cannot get new connections');
    }
    const id = await createAppConnection(client, app.orgId, app.appId, settings.name);
    await applyConnectionSettings(client, id, settings);
    await recordAudit(client, {
      orgId: app.orgId,
      userId: actor.userId,
      action: 'connection.create',
      objectType: 'app_connection',
      objectId: id,
      details: { ...settings },
    });
    return connectionById(client, id);
  });
}

/** Changes a connection's name or settings; keys of the connection see them at once. */
export async function updateConnectionAs(
  db: DbPool,
  apiKeys: Pick<ApiKeyStore, 'invalidate'>,
  actor: Actor,
  connection: { orgId: string; id: string },
  settings: ConnectionSettings,
): Promise<ConnectionRow> {
  const row = await withTransaction(db, async (client) => {
    await applyConnectionSettings(client, connection.id, settings);
    await recordAudit(client, {
      orgId: connection.orgId,
      userId: actor.userId,
      action: 'connection.update',
      objectType: 'app_connection',
      objectId: connection.id,
      details: { ...settings },
    });
    return connectionById(client, connection.id);
  });
  await invalidateKeysOf(db, apiKeys, connection.id);
  return row;
}

/** Revokes a connection: its API keys stop working on every instance. */
export async function revokeConnectionAs(
  db: DbPool,
  apiKeys: Pick<ApiKeyStore, 'invalidate'>,
  actor: Actor,
  connection: { orgId: string; id: string },
): Promise<ConnectionRow> {
  const row = await withTransaction(db, async (client) => {
    await client.query(
      "UPDATE app_connections SET status = 'revoked', updated_at = now() WHERE id = $1",
      [connection.id],
    );
    await recordAudit(client, {
      orgId: connection.orgId,
      userId: actor.userId,
      action: 'connection.revoke',
      objectType: 'app_connection',
      objectId: connection.id,
    });
    return connectionById(client, connection.id);
  });
  await invalidateKeysOf(db, apiKeys, connection.id);
  return row;
}

/** Changes what the settings name (the rest is kept), in the caller's transaction. */
export async function applyConnectionSettings(
  client: Pick<DbPool, 'query'>,
  id: string,
  settings: ConnectionSettings,
): Promise<void> {
  await client.query(
    `UPDATE app_connections
        SET name = COALESCE($2, name),
            requires_product_user = COALESCE($3, requires_product_user),
            credit_mode = COALESCE($4, credit_mode),
            overrun_policy = COALESCE($5, overrun_policy),
            updated_at = now()
      WHERE id = $1`,
    [
      id,
      settings.name ?? null,
      settings.requires_product_user ?? null,
      settings.credit_mode ?? null,
      settings.overrun_policy ?? null,
    ],
  );
}

async function connectionById(client: Pick<DbPool, 'query'>, id: string): Promise<ConnectionRow> {
  const { rows } = await client.query<ConnectionRow>(
    `SELECT ${COLUMNS} FROM app_connections WHERE id = $1`,
    [id],
  );
  return rows[0]!;
}

async function invalidateKeysOf(
  db: DbPool,
  apiKeys: Pick<ApiKeyStore, 'invalidate'>,
  connectionId: string,
): Promise<void> {
  const { rows } = await db.query<{ key_hash: string }>(
    'SELECT key_hash FROM api_keys WHERE app_connection_id = $1',
    [connectionId],
  );
  for (const { key_hash: keyHash } of rows) await apiKeys.invalidate(keyHash);
}
