// OAuth clients of an app: the one service the CLI (`gw oauth-client`) and the dashboard API
// share (client-auth.ts authenticates them at the token and revocation endpoints). A client
// secret leaves this module once, in the answer to its creation or rotation; only its SHA-256
// is stored, and a rotated-out one's while it still authenticates (decision 374).
import { invalidateConnectionsKeys, markConnectionRevoked } from '../admin/connections.js';
import { changeAudited, recordAudit, type Actor } from '../audit/audit.js';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import { CURSOR_COLUMN, readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { newOAuthClientId, newSecret, secretPrefixes, sha256Hex } from '../ids.js';
import { keptByRotation, stillRetiring, type RetiringSecret } from '../retiring-secrets.js';
import { displayNameProblem } from '../text.js';
import { MAX_REDIRECT_URIS, redirectUriProblem } from './redirect-uris.js';

/** An authenticated OAuth client, as the token and revocation routes get it. */
export interface OAuthClientIdentity {
  readonly clientId: string;
  readonly appId: string;
  /** The organization of the client's app (not the organizations its users pay from). */
  readonly orgId: string;
  readonly confidential: boolean;
}

export interface OAuthClientRow {
  readonly id: string;
  readonly org_id: string;
  readonly app_id: string;
  readonly name: string;
  readonly client_secret_hint: string | null;
  /** Secrets retired by rotations, oldest first (those past their grace may linger). */
  readonly retired_secrets: readonly RetiredClientSecret[];
  readonly redirect_uris: string[];
  readonly status: 'active' | 'deleted';
  readonly created_at: Date;
  readonly deleted_at: Date | null;
  readonly cursor_us: string;
}

export interface NewOAuthClient {
  readonly appId: string;
  readonly name: string;
  readonly redirectUris: readonly string[];
  /** A public client (a browser or native app) has no secret; PKCE alone binds its codes. */
  readonly public: boolean;
}

/** A rotated-out secret (its SHA-256) that authenticates until `expires_at`. */
export interface RetiredClientSecret extends RetiringSecret {
  readonly hash: string;
}

/** A client and, for a confidential one, its secret: in this answer only. */
export interface CreatedOAuthClient {
  readonly row: OAuthClientRow;
  readonly clientSecret: string | undefined;
}

export const CLIENT_ID_FORMAT = /^gw_client_[0-9A-Za-z]{16,64}$/;
const COLUMNS = `id, org_id, app_id, name, client_secret_hint, retired_secrets, redirect_uris,
  status, created_at, deleted_at, ${CURSOR_COLUMN}`;

/** What the dashboard shows of a secret: its prefix and first characters. */
const secretHint = (secret: string): string => `${secret.slice(0, 21)}…`;

/** What the dashboard shows of a client: the secret's hint, never the secret. */
export function oauthClientView(row: OAuthClientRow, nowMs = Date.now()): Record<string, unknown> {
  return {
    client_id: row.id,
    org_id: row.org_id,
    app_id: row.app_id,
    name: row.name,
    public: row.client_secret_hint === null,
    client_secret_hint: row.client_secret_hint,
    retired_secrets_expire_at: stillRetiring(row.retired_secrets, nowMs)
      .map((retired) => new Date(Date.parse(retired.expires_at)).toISOString())
      .sort(),
    redirect_uris: row.redirect_uris,
    status: row.status,
    created_at: row.created_at.toISOString(),
    deleted_at: row.deleted_at?.toISOString() ?? null,
  };
}

/** Why a list of redirect URIs cannot be registered, naming the bad one; or undefined. */
export function redirectUrisProblem(uris: readonly string[]): string | undefined {
  if (uris.length === 0) return 'redirect_uris: register at least one';
  if (uris.length > MAX_REDIRECT_URIS)
    return `redirect_uris: at most ${MAX_REDIRECT_URIS} per client`;
  for (const [index, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri);
    if (problem) return `redirect_uris.${index}: ${problem}`;
  }
  if (new Set(uris).size !== uris.length) return 'redirect_uris: each URI once';
  return undefined;
}

export async function createOAuthClientAs(
  db: DbPool,
  actor: Actor,
  input: NewOAuthClient,
): Promise<CreatedOAuthClient | GwError> {
  const problem = redirectUrisProblem(input.redirectUris);
  if (problem) return gwError('gw_invalid_request', problem);
  const nameProblem =
    input.name.trim() === '' || input.name.length > 200
      ? 'must be 1 to 200 characters'
      : displayNameProblem(input.name);
  if (nameProblem) return gwError('gw_invalid_request', `name: ${nameProblem}`);
  return withTransaction(db, async (client) => {
    const { rows: apps } = await client.query<{ org_id: string; status: string }>(
      'SELECT org_id, status FROM apps WHERE id = $1 FOR SHARE',
      [input.appId],
    );
    const app = apps[0];
    if (!app) return gwError('gw_not_found', `no app ${input.appId}`);
    if (app.status !== 'active') {
      return gwError('gw_conflict', 'the app is deleted: it cannot get new OAuth clients');
    }
    const id = newOAuthClientId();
    const secret = input.public ? undefined : newSecret(secretPrefixes.oauthClientSecret);
    await client.query(
      `INSERT INTO oauth_clients (id, org_id, app_id, name, client_secret_hash, client_secret_hint,
                                  redirect_uris)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        id,
        app.org_id,
        input.appId,
        input.name,
        secret === undefined ? null : sha256Hex(secret),
        secret === undefined ? null : secretHint(secret),
        input.redirectUris,
      ],
    );
    await recordAudit(client, {
      orgId: app.org_id,
      userId: actor.userId,
      action: 'oauth_client.create',
      objectType: 'oauth_client',
      objectId: id,
      details: { app_id: input.appId, name: input.name, public: input.public },
    });
    return { row: await clientById(client, id), clientSecret: secret };
  });
}

/**
 * A new secret for a confidential client (in the answer only). The old one keeps
 * authenticating beside it for `graceSeconds`, and those retired before it until their own
 * grace ends (at most MAX_RETIRING_SECRETS at once: one more is 409); 0 stops every old secret
 * at once (a leaked secret). The client's connections and their tokens are not touched. A
 * public client has no secret: 409.
 */
export async function rotateOAuthClientSecretAs(
  db: DbPool,
  actor: Actor,
  clientId: string,
  graceSeconds: number,
): Promise<CreatedOAuthClient | GwError> {
  const secret = newSecret(secretPrefixes.oauthClientSecret);
  return withTransaction(db, async (client) => {
    // "Still in grace" by the database's clock, the one client authentication ends it by.
    const { rows } = await client.query<
      OAuthClientRow & { confidential: boolean; db_now_ms: number }
    >(
      `SELECT ${COLUMNS}, client_secret_hash IS NOT NULL AS confidential,
              (extract(epoch FROM now()) * 1000)::float8 AS db_now_ms
         FROM oauth_clients
        WHERE id = $1 AND status = 'active' FOR UPDATE`,
      [clientId],
    );
    const before = rows[0];
    if (!before) return gwError('gw_not_found', 'no active OAuth client with this id');
    if (!before.confidential) {
      return gwError(
        'gw_conflict',
        'this OAuth client is public: it has no client_secret to rotate (PKCE alone binds its codes)',
      );
    }
    const kept = keptByRotation(
      stillRetiring(before.retired_secrets, before.db_now_ms),
      graceSeconds,
      'authenticate',
    );
    if ('refusal' in kept) return gwError('gw_conflict', kept.refusal);
    await client.query(
      `UPDATE oauth_clients SET
         retired_secrets = $2::jsonb || CASE WHEN $3 > 0
           THEN jsonb_build_array(jsonb_build_object(
                  'hash', client_secret_hash,
                  'expires_at', now() + $3 * interval '1 second'))
           ELSE '[]'::jsonb END,
         client_secret_hash = $4,
         client_secret_hint = $5
       WHERE id = $1`,
      [clientId, JSON.stringify(kept), graceSeconds, sha256Hex(secret), secretHint(secret)],
    );
    await recordAudit(client, {
      orgId: before.org_id,
      userId: actor.userId,
      action: 'oauth_client.rotate_secret',
      objectType: 'oauth_client',
      objectId: clientId,
      details: { grace_seconds: graceSeconds },
    });
    return { row: await clientById(client, clientId), clientSecret: secret };
  });
}

export function listOAuthClients(
  db: DbPool,
  appId: string,
  page: PageRequest,
): Promise<Page<OAuthClientRow>> {
  const select = `SELECT ${COLUMNS} FROM oauth_clients`;
  return readPage(
    db,
    { select, where: "app_id = $1 AND status = 'active'", params: [appId] },
    page,
  );
}

/**
 * Deletes a client: it can no longer authorize or authenticate, and every connection made
 * through it is revoked (its tokens stop on every instance), in the same transaction: a
 * failure half-way leaves the client and its connections as they were, never a deleted
 * client whose tokens still work. The row stays, marked deleted, for the usage records that
 * name it. Null when there is no active client with this id.
 */
export async function deleteOAuthClientAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  clientId: string,
): Promise<OAuthClientRow | null> {
  const deleted = await withTransaction(db, async (client) => {
    const row = await changeAudited<OAuthClientRow>(
      client,
      `UPDATE oauth_clients SET status = 'deleted', deleted_at = now()
        WHERE id = $1 AND status = 'active' RETURNING ${COLUMNS}`,
      [clientId],
      {
        userId: actor.userId,
        action: 'oauth_client.delete',
        objectType: 'oauth_client',
        objectId: clientId,
      },
    );
    if (!row) return null;
    const { rows: connections } = await client.query<{ id: string }>(
      `SELECT id FROM app_connections WHERE oauth_client_id = $1 AND status = 'active'
        ORDER BY id FOR UPDATE`,
      [clientId],
    );
    // The paying organizations' audit logs name the client, not the app owner's user.
    for (const { id } of connections) await markConnectionRevoked(client, { userId: clientId }, id);
    return { row, connectionIds: connections.map(({ id }) => id) };
  });
  if (!deleted) return null;
  await invalidateConnectionsKeys(db, apiKeys, deleted.connectionIds);
  return deleted.row;
}

/** Deletes every active OAuth client of an app (the app is being deleted). */
export async function deleteOAuthClientsOfAppAs(
  db: DbPool,
  apiKeys: ApiKeyInvalidation,
  actor: Actor,
  appId: string,
): Promise<void> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM oauth_clients WHERE app_id = $1 AND status = 'active'`,
    [appId],
  );
  for (const { id } of rows) await deleteOAuthClientAs(db, apiKeys, actor, id);
}

/** An active client and what the consent page names: its app and the app's organization. */
export interface AuthorizingClient {
  readonly clientId: string;
  readonly name: string;
  readonly appId: string;
  readonly appName: string;
  readonly appOrgName: string;
  readonly redirectUris: readonly string[];
}

/**
 * The client an authorization request names, while it and its app are active: a deleted
 * client's, or one whose app is deleted, answers as an unknown client_id (decision 420).
 */
export async function findAuthorizingClient(
  db: DbPool,
  clientId: string | undefined,
): Promise<AuthorizingClient | undefined> {
  if (clientId === undefined || !CLIENT_ID_FORMAT.test(clientId)) return undefined;
  const { rows } = await db.query<{
    id: string;
    name: string;
    app_id: string;
    app_name: string;
    org_name: string;
    redirect_uris: string[];
  }>(
    `SELECT c.id, c.name, c.app_id, a.name AS app_name, o.name AS org_name, c.redirect_uris
       FROM oauth_clients c JOIN apps a ON a.id = c.app_id JOIN organizations o ON o.id = c.org_id
      WHERE c.id = $1 AND c.status = 'active' AND a.status = 'active'`,
    [clientId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    clientId: row.id,
    name: row.name,
    appId: row.app_id,
    appName: row.app_name,
    appOrgName: row.org_name,
    redirectUris: row.redirect_uris,
  };
}

async function clientById(db: Pick<DbPool, 'query'>, id: string): Promise<OAuthClientRow> {
  const { rows } = await db.query<OAuthClientRow>(
    `SELECT ${COLUMNS} FROM oauth_clients WHERE id = $1`,
    [id],
  );
  return rows[0]!;
}
