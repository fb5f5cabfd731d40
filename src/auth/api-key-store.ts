// API-key authentication for inference routes: in-process cache → Redis → Postgres.
// Keys are stored as SHA-256 hashes. Both cache layers remember misses too (briefly), so a
// flood of one unknown key reaches Postgres once per instance and TTL. Revocations bump the
// key's generation in Redis and are broadcast over pub/sub, and neither layer lets a lookup
// that read Postgres before the revoke store what it read after it.
import type { RedisClient } from '../redis/connect.js';
import { LocalCache } from '../cache/local-cache.js';
import { GuardedRedisCache } from '../cache/guarded-redis-cache.js';
import type { LoadGate } from '../cache/load-gate.js';
import {
  publishInvalidation,
  type CacheInvalidation,
  type InvalidatedCache,
} from '../cache/invalidation.js';
import type { DbPool } from '../db/pool.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';
import {
  PostgresApiKeyRecords,
  type ApiKeyIdentity,
  type ApiKeyRecords,
} from './api-key-records.js';
import {
  NEGATIVE_TTL_MS,
  keyCache,
  keyLookupGate,
  shedWhenGateFull,
  type KeyLookupOptions,
} from './key-lookup.js';
import { describeSecretKind, presentedSecretOf } from './presented-secret.js';

export type { ApiKeyIdentity, ApiKeyRecords } from './api-key-records.js';

const API_KEY_FORMAT = /^gw_[0-9A-Za-z]{32,64}$/;
/** An OAuth connection's token: the same record, cache and revocation as an API key. */
const OAUTH_TOKEN_FORMAT = /^gw_oauth_[0-9A-Za-z]{32,64}$/;
const REDIS_CACHE_TTL_S = 300;
const MAX_CACHED_KEYS = 100_000;
const MAX_CACHED_BYTES = 64 * 1024 * 1024;

/** The shared Redis layer of the API-key cache (also used by the admin tools to invalidate). */
export function apiKeySharedCache(redis: RedisClient, keys: RedisKeys): GuardedRedisCache {
  return new GuardedRedisCache(redis, (keyHash) => ({
    value: keys.apiKey(keyHash),
    generation: keys.apiKeyGeneration(keyHash),
  }));
}

/** What a change that stops API keys needs: their invalidation on every instance. */
export type ApiKeyInvalidation = Pick<ApiKeyStore, 'invalidate'>;

export class ApiKeyStore implements InvalidatedCache {
  private readonly cache: LocalCache<ApiKeyIdentity>;
  private readonly shared: GuardedRedisCache;
  private readonly records: ApiKeyRecords;
  private readonly gate: LoadGate;

  constructor(
    db: DbPool,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    cacheTtlMs: number,
    options: KeyLookupOptions<ApiKeyRecords> = {},
  ) {
    this.records = options.records ?? new PostgresApiKeyRecords(db);
    this.gate = keyLookupGate(options);
    this.cache = keyCache(cacheTtlMs, {
      maxEntries: MAX_CACHED_KEYS,
      maxBytes: MAX_CACHED_BYTES,
    });
    this.shared = apiKeySharedCache(redis, keys);
  }

  /**
   * The identity of the presented API key or OAuth token (`gw_oauth_…`, which is an API-key
   * record of its connection), or the spec's error for it (never echoing the secret).
   */
  async authenticate(headers: Readonly<Record<string, string>>): Promise<ApiKeyIdentity | GwError> {
    const presented = presentedSecretOf(headers, 'api_key');
    if (isGwError(presented)) return presented;
    const { raw, kind } = presented;
    if (kind !== undefined && kind !== 'api_key' && kind !== 'oauth_token') {
      return gwError(
        'gw_unknown_key',
        `${describeSecretKind(kind)} cannot make inference calls: send an API key (gw_…)`,
      );
    }
    const oauth = kind === 'oauth_token';
    if (!(oauth ? OAUTH_TOKEN_FORMAT : API_KEY_FORMAT).test(raw)) {
      return gwError(
        'gw_malformed_or_missing_key',
        kind === undefined
          ? 'the presented value is not an API key: API keys start with gw_'
          : oauth
            ? 'malformed OAuth token: expected gw_oauth_ followed by 32 to 64 letters and digits'
            : 'malformed API key: expected gw_ followed by 32 to 64 letters and digits',
      );
    }
    const found = await shedWhenGateFull(this.lookup(sha256Hex(raw)));
    if (isGwError(found)) return found;
    const identity = found.value;
    if (!identity)
      return gwError('gw_unknown_key', oauth ? 'unknown OAuth token' : 'unknown API key');
    if (!identity.active) {
      return gwError(
        'gw_key_inactive',
        oauth
          ? 'this OAuth token is revoked: the app must ask the user to connect again'
          : identity.replacedByRotation === true
            ? 'this API key was replaced by a rotation: use the new key issued in its place'
            : 'this API key is revoked or inactive',
      );
    }
    if (typeof identity.expiresAtMs === 'number' && identity.expiresAtMs <= Date.now()) {
      return gwError(
        'gw_key_inactive',
        'this API key was rotated and its grace period has ended: use the new key issued in its place',
      );
    }
    return identity;
  }

  /** Forgets a key hash everywhere (call after revoking or changing a key or its connection). */
  async invalidate(keyHash: string): Promise<void> {
    await this.shared.invalidate([keyHash]);
    this.cache.invalidate(keyHash);
    await publishInvalidation(this.redis, this.keys.invalidationChannel(), {
      kind: 'api-key',
      keyHash,
    });
  }

  handleInvalidation(invalidation: CacheInvalidation): void {
    if (invalidation.kind === 'all-api-keys') this.cache.invalidateAll();
    else if (invalidation.kind === 'api-key') this.cache.invalidate(invalidation.keyHash);
  }

  clearLocalCache(): void {
    this.cache.invalidateAll();
  }

  /** Lookups that reached Postgres, hits, evictions… (for tests and metrics). */
  cacheStats(): ReturnType<LocalCache<ApiKeyIdentity>['stats']> {
    return this.cache.stats();
  }

  private lookup(keyHash: string): Promise<ApiKeyIdentity | undefined> {
    return this.cache.get(keyHash, () => this.loadShared(keyHash));
  }

  private async loadShared(keyHash: string): Promise<ApiKeyIdentity | undefined> {
    const cached = await this.shared.read(keyHash);
    if (cached.found) return (JSON.parse(cached.json) as ApiKeyIdentity | null) ?? undefined;
    const identity = await this.gate.run(() => this.records.findByHash(keyHash));
    await this.shared.fill(
      keyHash,
      cached.generation,
      JSON.stringify(identity ?? null),
      identity ? REDIS_CACHE_TTL_S : Math.ceil(NEGATIVE_TTL_MS / 1000),
    );
    return identity;
  }
}
