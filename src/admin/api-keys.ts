// API keys of an app connection: the one service the CLI (`gw api-key`) and the dashboard API
// share. A raw key leaves this module once, in the answer to its creation or rotation; it is
// never logged or audited. Every change reaches every instance's key cache through the key
// store's invalidation (its generation guard keeps a racing lookup from caching the old state),
// and writes its webhook event (api_key.created / .updated / .revoked) in its transaction.
import { modelPolicyProblem, modelPolicyWarnings } from '../catalog/model-policy.js';
import { changeAudited, recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { emitEvent } from '../webhooks/outbox.js';
import { invalidateApiKeys, revokeConnection } from './connections.js';
import { createApiKey, DEFAULT_MODEL_POLICY } from './provisioning.js';
import {
  changedRateLimits,
  NO_RATE_LIMITS,
  rateLimitChangeFields,
  rateLimitFields,
  sameRateLimits,
  type ApiKeyRateLimits,
  type RateLimitChange,
} from './api-key-rate-limits.js';

/** The longest grace period a rotation may give the old key (24 h). */
export const MAX_ROTATION_GRACE_S = 86_400;

export interface ApiKeyRow {
  readonly id: string;
  readonly org_id: string;
  readonly app_id: string;
  readonly app_connection_id: string;
  readonly name: string | null;
  readonly key_hint: string;
  /** 'oauth_token': the `gw_oauth_…` token of an OAuth connection. */
  readonly kind: 'api_key' | 'oauth_token';
  readonly status: 'active' | 'revoked';
  readonly model_policy: string[];
  readonly created_at: Date;
  readonly revoked_at: Date | null;
  readonly expires_at: Date | null;
  readonly replaced_by: string | null;
  readonly requests_per_minute: number | null;
  readonly product_user_requests_per_minute: number | null;
  readonly cursor_us: string;
}

/** A key and, once only, its raw value. */
export interface IssuedApiKey {
  readonly row: ApiKeyRow;
  readonly rawKey: string;
}

const COLUMNS = `id, org_id, app_id, app_connection_id, name, key_hint, kind, status, model_policy,
  created_at, revoked_at, expires_at, replaced_by, requests_per_minute,
  product_user_requests_per_minute, ${CURSOR_COLUMN}`;

/** What the dashboard shows of a key: its hint, never the key. */
export function apiKeyView(row: ApiKeyRow, now = Date.now()): Record<string, unknown> {
  const expired = row.expires_at !== null && row.expires_at.getTime() <= now;
  return {
    id: row.id,
    org_id: row.org_id,
    app_id: row.app_id,
    app_connection_id: row.app_connection_id,
    name: row.name,
    key_hint: row.key_hint,
    kind: row.kind,
    status: row.status === 'revoked' ? 'revoked' : expired ? 'expired' : 'active',
    model_policy: row.model_policy,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
    replaced_by: row.replaced_by,
    requests_per_minute: row.requests_per_minute,
    product_user_requests_per_minute: row.product_user_requests_per_minute,
  };
}

/** The key's request-rate limits. */
export function rateLimitsOf(row: ApiKeyRow): ApiKeyRateLimits {
  return {
    requestsPerMinute: row.requests_per_minute,
    productUserRequestsPerMinute: row.product_user_requests_per_minute,
  };
}

export function listApiKeys(
  db: DbPool,
  connectionId: string,
  page: PageRequest,
): Promise<Page<ApiKeyRow>> {
  const select = `SELECT ${COLUMNS} FROM api_keys`;
  return readPage(db, { select, where: 'app_connection_id = $1', params: [connectionId] }, page);
}

/**
 * Issues a key for an active connection; its raw value is in the answer only. A policy with a
 * pattern that can never match is refused; `warnings` name its exact model ids the catalogue
 * does not list (yet): the key is issued all the same (decision 338).
 */
export async function createApiKeyAs(
  db: DbPool,
  actor: Actor,
  connectionId: string,
  settings: {
    readonly name?: string | undefined;
    readonly modelPolicy?: readonly string[];
    readonly rateLimits?: ApiKeyRateLimits;
  },
): Promise<(IssuedApiKey & { readonly warnings: readonly string[] }) | GwError> {
  return withTransaction(db, async (client) => {
    const { rows } = await client.query<{
      org_id: string;
      app_id: string;
      status: string;
      oauth_client_id: string | null;
    }>(
      'SELECT org_id, app_id, status, oauth_client_id FROM app_connections WHERE id = $1 FOR SHARE',
      [connectionId],
    );
    const connection = rows[0];
    if (!connection) return gwError('gw_not_found', `no app connection ${connectionId}`);
    if (connection.status !== 'active') {
      return gwError('gw_conflict', 'the connection is revoked: its keys cannot be issued');
    }
    if (connection.oauth_client_id !== null) {
      return gwError(
        'gw_conflict',
        "an OAuth connection's only credential is the token its app received: no API keys are issued on it",
      );
    }
    const modelPolicy = settings.modelPolicy ?? DEFAULT_MODEL_POLICY;
    const rateLimits = settings.rateLimits ?? NO_RATE_LIMITS;
    const problem = modelPolicyProblem(modelPolicy);
    if (problem !== undefined) return gwError('gw_invalid_request', `model_policy: ${problem}`);
    const key = await createApiKey(
      client,
      { orgId: connection.org_id, appId: connection.app_id, appConnectionId: connectionId },
      modelPolicy,
      settings.name ?? null,
      rateLimits,
    );
    await recordAudit(client, {
      orgId: connection.org_id,
      userId: actor.userId,
      action: 'api_key.create',
      objectType: 'api_key',
      objectId: key.id,
      details: {
        app_connection_id: connectionId,
        name: settings.name ?? null,
        model_policy: modelPolicy,
        // named when set (a key without limits is audited as before them)
        ...((rateLimits.requestsPerMinute !== null ||
          rateLimits.productUserRequestsPerMinute !== null) &&
          rateLimitFields(rateLimits)),
      },
    });
    const row = (await apiKeyById(client, key.id))!;
    await emitEvent(client, row.org_id, 'api_key.created', apiKeyView(row));
    return {
      row,
      rawKey: key.rawKey,
      warnings: await modelPolicyWarnings(client, modelPolicy, 'key'),
    };
  });
}

/**
 * Rotation: a new key for the same connection, name and model policy. The old key stops at
 * once (revoked), or with a grace period keeps working until `expires_at` — the key store
 * checks that time on every request, so no cache can serve the key past it.
 */
export async function rotateApiKeyAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  keyId: string,
  graceSeconds: number,
): Promise<{ issued: IssuedApiKey; previous: ApiKeyRow } | GwError> {
  return changeKey(db, apiKeys, keyId, async (client) => {
    const old = await lockedUsableKey(client, keyId);
    if ('code' in old) return old;
    const key = await createApiKey(
      client,
      { orgId: old.org_id, appId: old.app_id, appConnectionId: old.app_connection_id },
      old.model_policy,
      old.name,
      rateLimitsOf(old),
    );
    await client.query(
      graceSeconds === 0
        ? `UPDATE api_keys SET status = 'revoked', revoked_at = now(), replaced_by = $2
            WHERE id = $1`
        : `UPDATE api_keys
              SET expires_at = LEAST(expires_at, now() + $3 * interval '1 second'), replaced_by = $2
            WHERE id = $1`,
      graceSeconds === 0 ? [keyId, key.id] : [keyId, key.id, graceSeconds],
    );
    await recordAudit(client, {
      orgId: old.org_id,
      userId: actor.userId,
      action: 'api_key.rotate',
      objectType: 'api_key',
      objectId: keyId,
      details: { replaced_by: key.id, grace_seconds: graceSeconds },
    });
    const issued = (await apiKeyById(client, key.id))!;
    const previous = (await apiKeyById(client, keyId))!;
    await emitEvent(client, issued.org_id, 'api_key.created', apiKeyView(issued));
    if (previous.status === 'revoked') {
      await emitEvent(client, previous.org_id, 'api_key.revoked', apiKeyView(previous));
    }
    return { issued: { row: issued, rawKey: key.rawKey }, previous };
  });
}

/**
 * Changes the request-rate limits of a key or an OAuth token (an absent one is kept, null
 * clears it); every instance applies them to its next request (the key caches are
 * invalidated). Audited as `api_key.update` with the limits before and after, read under the
 * row's lock in the same transaction as the change, which also writes the `api_key.updated`
 * event when the limits differ from those before. A key that no longer works (revoked, its
 * connection revoked, its rotation grace period over) is refused, 409, and nothing changes
 * (decision 355): it can never be used again, so a limit on it would only mislead.
 */
export async function updateApiKeyLimitsAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  keyId: string,
  change: RateLimitChange,
): Promise<ApiKeyRow | GwError> {
  return changeKey(db, apiKeys, keyId, async (client) => {
    const locked = await lockedKey(client, keyId);
    if ('code' in locked) return locked;
    const { row: old, connectionStatus } = locked;
    const stopped = stoppedKeyProblem(old, connectionStatus);
    if (stopped !== undefined) {
      return gwError('gw_conflict', `${stopped}: its limits can no longer be changed`);
    }
    const previous = rateLimitsOf(old);
    const limits = changedRateLimits(previous, change);
    const { rows: updated } = await client.query<ApiKeyRow>(
      `UPDATE api_keys SET requests_per_minute = $2, product_user_requests_per_minute = $3
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [keyId, limits.requestsPerMinute, limits.productUserRequestsPerMinute],
    );
    await recordAudit(client, {
      orgId: old.org_id,
      userId: actor.userId,
      action: 'api_key.update',
      objectType: 'api_key',
      objectId: keyId,
      details: rateLimitChangeFields(previous, limits),
    });
    const row = updated[0]!;
    // Setting the limits a key has is no change to announce (as blocking a blocked user).
    if (!sameRateLimits(previous, limits)) {
      await emitEvent(client, row.org_id, 'api_key.updated', apiKeyView(row));
    }
    return row;
  });
}

/**
 * Runs `change` on one key in a transaction; once it has committed (not refused), drops the key
 * from every instance's cache.
 */
async function changeKey<Changed extends object>(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  keyId: string,
  change: (client: DbClient) => Promise<Changed | GwError>,
): Promise<Changed | GwError> {
  const result = await withTransaction(db, change);
  if (!isGwError(result)) await invalidateApiKeys(db, apiKeys, { keyId });
  return result;
}

/**
 * Revokes a key at once (also one in its rotation grace period). Null when there is none.
 * An OAuth token is its connection's only credential: revoking it revokes the connection.
 */
export async function revokeApiKeyAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  keyId: string,
): Promise<ApiKeyRow | null> {
  const { rows: tokens } = await db.query<{ app_connection_id: string }>(
    "SELECT app_connection_id FROM api_keys WHERE id = $1 AND kind = 'oauth_token'",
    [keyId],
  );
  if (tokens[0]) {
    await revokeConnection(db, apiKeys, actor, tokens[0].app_connection_id);
    return apiKeyById(db, keyId);
  }
  const row = await withTransaction(db, async (client) => {
    const revoked = await changeAudited(
      client,
      `UPDATE api_keys SET status = 'revoked', revoked_at = now()
        WHERE id = $1 AND status = 'active' RETURNING org_id`,
      [keyId],
      { userId: actor.userId, action: 'api_key.revoke', objectType: 'api_key', objectId: keyId },
    );
    const row = await apiKeyById(client, keyId);
    if (revoked && row) await emitEvent(client, row.org_id, 'api_key.revoked', apiKeyView(row));
    return row;
  });
  if (row) await invalidateApiKeys(db, apiKeys, { keyId });
  return row;
}

/** A key that may be rotated, under its lock: a working key, not an OAuth token, not rotated yet. */
async function lockedUsableKey(
  client: Pick<DbPool, 'query'>,
  keyId: string,
): Promise<ApiKeyRow | GwError> {
  const locked = await lockedKey(client, keyId);
  if ('code' in locked) return locked;
  const { row, connectionStatus } = locked;
  if (row.kind === 'oauth_token') {
    return gwError(
      'gw_conflict',
      'an OAuth token is not rotated: the app gets a new one by connecting again',
    );
  }
  if (row.replaced_by !== null) {
    return gwError('gw_conflict', 'this API key is already rotated: rotate its successor');
  }
  const stopped = stoppedKeyProblem(row, connectionStatus);
  if (stopped !== undefined) return gwError('gw_conflict', `${stopped}: it cannot be rotated`);
  return row;
}

/**
 * A key under its lock (FOR UPDATE), with the status of its connection. The connection is
 * locked first (FOR SHARE), in the order a revocation takes them (the connection, then its
 * OAuth token): a revocation waits for the change or the change sees it, and the two never
 * deadlock.
 */
async function lockedKey(
  client: Pick<DbPool, 'query'>,
  keyId: string,
): Promise<{ row: ApiKeyRow; connectionStatus: string } | GwError> {
  const { rows: connections } = await client.query<{ status: string }>(
    `SELECT c.status FROM app_connections c JOIN api_keys k ON k.app_connection_id = c.id
      WHERE k.id = $1 FOR SHARE OF c`,
    [keyId],
  );
  const { rows } = await client.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`,
    [keyId],
  );
  const row = rows[0];
  if (!row || !connections[0]) return gwError('gw_not_found', `no API key ${keyId}`);
  return { row, connectionStatus: connections[0].status };
}

/**
 * Why a key no longer works, as the gateway refuses it (gw_key_inactive), or undefined while
 * it does: revoked, its connection revoked, or past a rotation's grace period.
 */
function stoppedKeyProblem(row: ApiKeyRow, connectionStatus: string): string | undefined {
  const what = row.kind === 'oauth_token' ? 'this OAuth token' : 'this API key';
  if (row.status !== 'active') return `${what} is revoked`;
  if (connectionStatus !== 'active') return `${what}'s connection is revoked`;
  if (row.expires_at !== null && row.expires_at.getTime() <= Date.now()) {
    return `${what} was rotated and its grace period has ended`;
  }
  return undefined;
}

/** The key, or null when there is none. */
async function apiKeyById(client: Pick<DbPool, 'query'>, id: string): Promise<ApiKeyRow | null> {
  const { rows } = await client.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [
    id,
  ]);
  return rows[0] ?? null;
}
