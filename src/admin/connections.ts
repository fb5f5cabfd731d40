// App connections: the service the dashboard API (and the seed) share. A connection carries
// the settings that govern its product users; API keys hang off it. Changing a connection's
// settings or revoking it reaches every instance's key cache at once. A connection made by
// OAuth consent (oauth_client_id set) belongs to the organization that pays for it; revoking
// it also revokes its OAuth token, however it is revoked (revokeConnection is the one rule).
import { recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { createAppConnection } from './provisioning.js';
import { recordOAuthConnectionEvent } from './connection-events.js';

export interface ConnectionRow {
  readonly id: string;
  readonly org_id: string;
  readonly app_id: string;
  readonly name: string;
  readonly status: 'active' | 'revoked';
  readonly requires_product_user: boolean;
  readonly credit_mode: 'enforce' | 'track_only' | 'disabled';
  readonly overrun_policy: 'limit_output' | 'reject';
  /** The OAuth client an OAuth connection was made through (null: made in the dashboard). */
  readonly oauth_client_id: string | null;
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
    oauth_client_id: row.oauth_client_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const COLUMNS = `id, org_id, app_id, name, status, requires_product_user, credit_mode, overrun_policy,
  oauth_client_id, created_at, updated_at, ${CURSOR_COLUMN}`;

export function listConnections(
  db: DbPool,
  appId: string,
  page: PageRequest,
): Promise<Page<ConnectionRow>> {
  const select = `SELECT ${COLUMNS} FROM app_connections`;
  // The app's own organization's connections: those other organizations made by OAuth
  // consent are theirs (they see them as connected apps).
  const where = 'app_id = $1 AND org_id = (SELECT org_id FROM apps WHERE id = $1)';
  return readPage(db, { select, where, params: [appId] }, page);
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
    return (await connectionById(client, id))!;
  });
}

/** Changes a connection's name or settings; keys of the connection see them at once. */
export async function updateConnectionAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
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
    return (await connectionById(client, connection.id))!;
  });
  await invalidateApiKeys(db, apiKeys, { connectionId: connection.id });
  return row;
}

/** Revokes a connection: its API keys stop working on every instance. */
export async function revokeConnectionAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  connection: { orgId: string; id: string },
): Promise<ConnectionRow> {
  const revoked = await revokeConnection(db, apiKeys, actor, connection.id);
  return revoked!.row;
}

/**
 * Revokes a connection, whoever asks: its API keys, or an OAuth connection's token, stop
 * working on every instance within a second (requests already admitted settle normally).
 * `changed` is false when it was already revoked (nothing is written then). Null when there
 * is no such connection.
 */
export async function revokeConnection(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  connectionId: string,
): Promise<{ row: ConnectionRow; changed: boolean } | null> {
  const result = await withTransaction(db, (client) =>
    markConnectionRevoked(client, actor, connectionId),
  );
  // Always: a repeated revocation also repairs a cache an earlier failure left behind.
  if (result) await invalidateApiKeys(db, apiKeys, { connectionId });
  return result;
}

/**
 * revokeConnection's writes, in the caller's transaction (the caller drops the keys from the
 * caches once it commits): the connection, an OAuth connection's token, the event, the audit.
 */
export async function markConnectionRevoked(
  client: Pick<DbPool, 'query'>,
  actor: Actor,
  connectionId: string,
): Promise<{ row: ConnectionRow; changed: boolean } | null> {
  const { rows } = await client.query<ConnectionRow>(
    `UPDATE app_connections SET status = 'revoked', revoked_at = now(), updated_at = now()
      WHERE id = $1 AND status = 'active' RETURNING ${COLUMNS}`,
    [connectionId],
  );
  const revoked = rows[0];
  if (revoked) {
    if (revoked.oauth_client_id !== null) {
      await client.query(
        `UPDATE api_keys SET status = 'revoked', revoked_at = now()
          WHERE app_connection_id = $1 AND kind = 'oauth_token' AND status = 'active'`,
        [connectionId],
      );
      await recordOAuthConnectionEvent(client, {
        type: 'oauth_connection.revoked',
        orgId: revoked.org_id,
        appConnectionId: revoked.id,
        appId: revoked.app_id,
        oauthClientId: revoked.oauth_client_id,
        occurredAt: new Date(),
      });
    }
    await recordAudit(client, {
      orgId: revoked.org_id,
      userId: actor.userId,
      action: 'connection.revoke',
      objectType: 'app_connection',
      objectId: connectionId,
    });
    return { row: revoked, changed: true };
  }
  const existing = await connectionById(client, connectionId);
  return existing ? { row: existing, changed: false } : null;
}

/**
 * Revokes, in the caller's transaction, the active OAuth connections `userId` approved for
 * `orgId` (they left it, or lost the role that may connect apps). Answers their ids: the
 * caller drops their tokens from every instance's cache once it commits
 * (invalidateConnectionsKeys).
 */
export async function revokeOAuthConnectionsApprovedBy(
  client: Pick<DbPool, 'query'>,
  actor: Actor,
  approval: { orgId: string; userId: string },
): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM app_connections
      WHERE org_id = $1 AND connected_by_user_id = $2 AND oauth_client_id IS NOT NULL
        AND status = 'active'
      ORDER BY id FOR UPDATE`,
    [approval.orgId, approval.userId],
  );
  for (const { id } of rows) await markConnectionRevoked(client, actor, id);
  return rows.map((row) => row.id);
}

/** Drops the keys of revoked connections from every instance's cache (after the commit). */
export async function invalidateConnectionsKeys(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  connectionIds: readonly string[],
): Promise<void> {
  for (const connectionId of connectionIds) {
    await invalidateApiKeys(db, apiKeys, { connectionId });
  }
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

/** The connection, or null when there is none. */
async function connectionById(
  client: Pick<DbPool, 'query'>,
  id: string,
): Promise<ConnectionRow | null> {
  const { rows } = await client.query<ConnectionRow>(
    `SELECT ${COLUMNS} FROM app_connections WHERE id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

/** Whose API keys: one key, or every key of a connection. */
export type ApiKeyOwner = { readonly keyId: string } | { readonly connectionId: string };

/** The hashes of the owner's API keys: what their cached identities are keyed by. */
export async function apiKeyHashes(
  db: Pick<DbPool, 'query'>,
  owner: ApiKeyOwner,
): Promise<string[]> {
  const [column, id] =
    'keyId' in owner ? ['id', owner.keyId] : ['app_connection_id', owner.connectionId];
  const { rows } = await db.query<{ key_hash: string }>(
    `SELECT key_hash FROM api_keys WHERE ${column} = $1`,
    [id],
  );
  return rows.map((row) => row.key_hash);
}

/** Drops the owner's API keys from every instance's cache at once. */
export async function invalidateApiKeys(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  owner: ApiKeyOwner,
): Promise<void> {
  for (const keyHash of await apiKeyHashes(db, owner)) await apiKeys.invalidate(keyHash);
}
