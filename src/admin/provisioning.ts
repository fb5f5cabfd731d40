// Provisioning of organizations, apps, connections and keys: the inserts the admin CLI, the
// seed and the dashboard services (api-keys.ts, service-keys.ts) build on. Raw keys are
// returned once and stored only as hashes.
import type { DbPool } from '../db/pool.js';
import { NO_RATE_LIMITS, type ApiKeyRateLimits } from './api-key-rate-limits.js';
import { newId, newSecret, secretPrefixes, sha256Hex } from '../ids.js';
import { PROVIDERS } from '../providers/registry.js';

/** A new key may use every registered provider's models ('vendor_a/*', 'vendor_b/*'). */
export const DEFAULT_MODEL_POLICY: readonly string[] = PROVIDERS.flatMap(
  (provider) => provider.defaultModelPolicy,
);
export const SERVICE_KEY_SCOPES = ['product_users:read', 'product_users:write'] as const;

/**
 * What lists and logs show of a key, service key or OAuth token: its first ten characters
 * (docs/sessions.md), one rule for every kind, so none shows more of its secret than an API
 * key's seven characters (a gw_oauth_ token shows one, a gw_svc_ key three).
 */
const hint = (raw: string): string => `${raw.slice(0, 10)}…`;

/** Creates an organization and its wallet (inside the caller's transaction when given one). */
export async function createOrganization(db: Pick<DbPool, 'query'>, name: string): Promise<string> {
  const orgId = newId('org');
  await db.query('INSERT INTO organizations (id, name) VALUES ($1, $2)', [orgId, name]);
  await db.query('INSERT INTO wallets (org_id) VALUES ($1)', [orgId]);
  return orgId;
}

export async function createApp(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  name: string,
): Promise<string> {
  const appId = newId('app');
  await db.query('INSERT INTO apps (id, org_id, name) VALUES ($1, $2, $3)', [appId, orgId, name]);
  return appId;
}

export async function createAppConnection(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  appId: string,
  name: string,
): Promise<string> {
  const connectionId = newId('conn');
  await db.query('INSERT INTO app_connections (id, org_id, app_id, name) VALUES ($1, $2, $3, $4)', [
    connectionId,
    orgId,
    appId,
    name,
  ]);
  return connectionId;
}

interface ConnectionOfKey {
  orgId: string;
  appId: string;
  appConnectionId: string;
}

/** Stores a new api_keys row of the connection for the raw secret (only its hash and hint). */
async function insertApiKeyRow(
  db: Pick<DbPool, 'query'>,
  connection: ConnectionOfKey,
  row: {
    readonly rawSecret: string;
    readonly modelPolicy: readonly string[];
    readonly name: string | null;
    readonly kind: 'api_key' | 'oauth_token';
    readonly rateLimits?: ApiKeyRateLimits;
  },
): Promise<string> {
  const id = newId('key');
  await db.query(
    `INSERT INTO api_keys (id, org_id, app_id, app_connection_id, key_hash, key_hint, model_policy,
                           name, kind, requests_per_minute, product_user_requests_per_minute)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      id,
      connection.orgId,
      connection.appId,
      connection.appConnectionId,
      sha256Hex(row.rawSecret),
      hint(row.rawSecret),
      row.modelPolicy,
      row.name,
      row.kind,
      row.rateLimits?.requestsPerMinute ?? null,
      row.rateLimits?.productUserRequestsPerMinute ?? null,
    ],
  );
  return id;
}

export async function createApiKey(
  db: Pick<DbPool, 'query'>,
  connection: ConnectionOfKey,
  modelPolicy: readonly string[] = DEFAULT_MODEL_POLICY,
  name: string | null = null,
  rateLimits: ApiKeyRateLimits = NO_RATE_LIMITS,
): Promise<{ id: string; rawKey: string }> {
  const rawKey = newSecret(secretPrefixes.apiKey);
  const id = await insertApiKeyRow(db, connection, {
    rawSecret: rawKey,
    modelPolicy,
    name,
    kind: 'api_key',
    rateLimits,
  });
  return { id, rawKey };
}

/**
 * The inference token of an OAuth connection (`gw_oauth_…`): an API-key row of kind
 * 'oauth_token', so the request path authenticates, caches and revokes it like an API key.
 */
export async function createOAuthToken(
  db: Pick<DbPool, 'query'>,
  connection: ConnectionOfKey,
  modelPolicy: readonly string[] = DEFAULT_MODEL_POLICY,
): Promise<{ id: string; rawToken: string }> {
  const rawToken = newSecret(secretPrefixes.oauthToken);
  const id = await insertApiKeyRow(db, connection, {
    rawSecret: rawToken,
    modelPolicy,
    name: 'OAuth token',
    kind: 'oauth_token',
  });
  return { id, rawToken };
}

export async function createServiceKey(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  scopes: readonly string[] = SERVICE_KEY_SCOPES,
  expiresAt: Date | null = null,
): Promise<{ id: string; rawKey: string }> {
  const rawKey = newSecret(secretPrefixes.serviceKey);
  const id = newId('svc');
  await db.query(
    `INSERT INTO service_keys (id, org_id, key_hash, key_hint, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [id, orgId, sha256Hex(rawKey), hint(rawKey), scopes, expiresAt],
  );
  return { id, rawKey };
}
