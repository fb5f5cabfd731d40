// API-key authentication for inference routes: in-process cache → Redis → Postgres.
// Keys are stored as SHA-256 hashes. Revocations are broadcast over Redis pub/sub so every
// instance drops its cached copy at once.
import type { Redis } from 'ioredis';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { secretPrefixes, sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';

export type CreditMode = 'enforce' | 'track_only' | 'disabled';
export type OverrunPolicy = 'limit_output' | 'reject';

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
}

const API_KEY_FORMAT = /^gw_[0-9A-Za-z]{32,64}$/;
const REDIS_CACHE_TTL_S = 300;

/** Reads the key from `Authorization: Bearer …` or (messages routes) `x-api-key`. */
export function readApiKey(headers: Readonly<Record<string, string>>): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match?.[1] ?? '';
  }
  return headers['x-api-key'];
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
}

export class ApiKeyStore {
  private readonly cache = new Map<string, { identity: ApiKeyIdentity; expiresAtMs: number }>();

  constructor(
    private readonly db: DbPool,
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly cacheTtlMs: number,
  ) {}

  /** The identity of the presented key, or the spec's error for it. */
  async authenticate(headers: Readonly<Record<string, string>>): Promise<ApiKeyIdentity | GwError> {
    const raw = readApiKey(headers);
    if (raw === undefined || raw === '') {
      return gwError(
        'gw_malformed_or_missing_key',
        'missing API key: send Authorization: Bearer gw_…',
      );
    }
    if (raw.startsWith(secretPrefixes.serviceKey)) {
      return gwError('gw_unknown_key', 'service keys cannot make inference calls; use an API key');
    }
    if (!API_KEY_FORMAT.test(raw)) {
      return gwError(
        'gw_malformed_or_missing_key',
        'malformed API key: expected gw_ followed by the secret',
      );
    }
    const identity = await this.lookup(sha256Hex(raw));
    if (!identity) return gwError('gw_unknown_key', 'unknown API key');
    if (!identity.active) return gwError('gw_key_inactive', 'this API key is revoked or inactive');
    return identity;
  }

  /** Forgets a key hash everywhere (call after revoking or changing a key or its connection). */
  async invalidate(keyHash: string): Promise<void> {
    this.cache.delete(keyHash);
    await this.redis.del(this.keys.apiKey(keyHash));
    await this.redis.publish(this.keys.invalidationChannel(), `apikey:${keyHash}`);
  }

  /** Applies an invalidation message received over pub/sub. */
  handleInvalidation(message: string): void {
    if (message === 'apikey:*') this.cache.clear();
    else if (message.startsWith('apikey:')) this.cache.delete(message.slice('apikey:'.length));
  }

  clearLocalCache(): void {
    this.cache.clear();
  }

  private async lookup(keyHash: string): Promise<ApiKeyIdentity | undefined> {
    const now = Date.now();
    const cached = this.cache.get(keyHash);
    if (cached && cached.expiresAtMs > now) return cached.identity;

    let identity: ApiKeyIdentity | undefined;
    const fromRedis = await this.redis.get(this.keys.apiKey(keyHash));
    if (fromRedis) {
      identity = JSON.parse(fromRedis) as ApiKeyIdentity;
    } else {
      identity = await this.loadFromDatabase(keyHash);
      if (!identity) return undefined;
      await this.redis.set(
        this.keys.apiKey(keyHash),
        JSON.stringify(identity),
        'EX',
        REDIS_CACHE_TTL_S,
      );
    }
    if (this.cacheTtlMs > 0)
      this.cache.set(keyHash, { identity, expiresAtMs: now + this.cacheTtlMs });
    return identity;
  }

  private async loadFromDatabase(keyHash: string): Promise<ApiKeyIdentity | undefined> {
    const { rows } = await this.db.query<ApiKeyRow>(
      `SELECT k.id, k.org_id, k.app_id, k.app_connection_id, k.status AS key_status,
              c.status AS connection_status, k.model_policy, c.requires_product_user,
              c.credit_mode, c.overrun_policy
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
    };
  }
}
