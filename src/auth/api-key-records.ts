// The API-key records in Postgres: the port the key store reads through on a cache miss.
import type { DbPool } from '../db/pool.js';

import type { CreditMode, OverrunPolicy } from '../billing/modes.js';

/** What an authenticated API key tells the request path. */
export interface ApiKeyIdentity {
  readonly keyId: string;
  readonly orgId: string;
  readonly appId: string;
  readonly appConnectionId: string;
  readonly active: boolean;
  readonly modelPolicy: readonly string[];
  readonly requiresProductUser: boolean;
  readonly creditMode: CreditMode;
  readonly overrunPolicy: OverrunPolicy;
  /**
   * When a rotated key's grace period ends (epoch ms), or null. Checked on every request, so
   * no cache layer can serve the key past it.
   */
  readonly expiresAtMs?: number | null;
  /**
   * Whether a rotation replaced this key (`replaced_by` set) while its connection stands: the
   * refusal of an inactive key then says so, so a caller with the old key can tell rotation
   * from revocation. Absent in an identity cached before it existed: the plain refusal.
   */
  readonly replacedByRotation?: boolean;
  /**
   * The OAuth client whose connection this is, for a `gw_oauth_…` token (null or absent: an
   * API key). Its usage records name the client.
   */
  readonly oauthClientId?: string | null;
  /**
   * The key's request-rate limits per minute: all its requests, and each product user's
   * under it (docs/limits.md). Null or absent: none. Absent in an identity an older instance
   * cached in Redis during a rolling deploy: no limit until that entry's TTL (decision 344).
   */
  readonly requestsPerMinute?: number | null;
  readonly productUserRequestsPerMinute?: number | null;
}

export interface ApiKeyRecords {
  /** The identity of the key with this SHA-256 hash, or undefined if no key has it. */
  findByHash(keyHash: string): Promise<ApiKeyIdentity | undefined>;
}

interface ApiKeyRow {
  id: string;
  org_id: string;
  app_id: string;
  app_connection_id: string;
  key_status: string;
  connection_status: string;
  model_policy: string[];
  requires_product_user: boolean;
  credit_mode: CreditMode;
  overrun_policy: OverrunPolicy;
  expires_at: Date | null;
  replaced: boolean;
  oauth_client_id: string | null;
  requests_per_minute: number | null;
  product_user_requests_per_minute: number | null;
}

export class PostgresApiKeyRecords implements ApiKeyRecords {
  constructor(private readonly db: DbPool) {}

  async findByHash(keyHash: string): Promise<ApiKeyIdentity | undefined> {
    const { rows } = await this.db.query<ApiKeyRow>(
      `SELECT k.id, k.org_id, k.app_id, k.app_connection_id, k.status AS key_status,
              c.status AS connection_status, k.model_policy, c.requires_product_user,
              c.credit_mode, c.overrun_policy, k.expires_at, k.replaced_by IS NOT NULL AS replaced,
              c.oauth_client_id,
              k.requests_per_minute, k.product_user_requests_per_minute
         FROM api_keys k JOIN app_connections c ON c.id = k.app_connection_id
        WHERE k.key_hash = $1`,
      [keyHash],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      keyId: row.id,
      orgId: row.org_id,
      appId: row.app_id,
      appConnectionId: row.app_connection_id,
      active: row.key_status === 'active' && row.connection_status === 'active',
      modelPolicy: row.model_policy,
      requiresProductUser: row.requires_product_user,
      creditMode: row.credit_mode,
      overrunPolicy: row.overrun_policy,
      expiresAtMs: row.expires_at?.getTime() ?? null,
      replacedByRotation: row.replaced && row.connection_status === 'active',
      oauthClientId: row.oauth_client_id,
      requestsPerMinute: row.requests_per_minute,
      productUserRequestsPerMinute: row.product_user_requests_per_minute,
    };
  }
}
