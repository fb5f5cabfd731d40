// Service-key authentication for the product-user management routes. Keys are stored as
// SHA-256 hashes, carry scopes, and are active, revoked, disabled or expired. Cached in
// process (misses too, briefly); a status or scope change drops every instance's cache
// (pub/sub 'service-keys'), and a lookup that was reading Postgres meanwhile does not store.
import type { LoadGate } from '../cache/load-gate.js';
import { LocalCache } from '../cache/local-cache.js';
import type { CacheInvalidation, InvalidatedCache } from '../cache/invalidation.js';
import type { DbPool } from '../db/pool.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import { keyCache, keyLookupGate, shedWhenGateFull, type KeyLookupOptions } from './key-lookup.js';
import { describeSecretKind, presentedSecretOf } from './presented-secret.js';

export type ServiceKeyScope = 'product_users:read' | 'product_users:write';

export interface ServiceKeyIdentity {
  readonly keyId: string;
  readonly orgId: string;
  readonly scopes: readonly string[];
}

export interface ServiceKeyRow {
  id: string;
  org_id: string;
  scopes: string[];
  status: 'active' | 'revoked' | 'disabled';
  expires_at: Date | null;
}

/** The service-key records in Postgres, read on a cache miss. */
export interface ServiceKeyRecords {
  findByHash(keyHash: string): Promise<ServiceKeyRow | undefined>;
}

export class PostgresServiceKeyRecords implements ServiceKeyRecords {
  constructor(private readonly db: DbPool) {}

  async findByHash(keyHash: string): Promise<ServiceKeyRow | undefined> {
    const { rows } = await this.db.query<ServiceKeyRow>(
      'SELECT id, org_id, scopes, status, expires_at FROM service_keys WHERE key_hash = $1',
      [keyHash],
    );
    return rows[0];
  }
}

const SERVICE_KEY_FORMAT = /^gw_svc_[0-9A-Za-z]{32,64}$/;
const MAX_CACHED_KEYS = 10_000;
const MAX_CACHED_BYTES = 8 * 1024 * 1024;

export class ServiceKeyStore implements InvalidatedCache {
  private readonly cache: LocalCache<ServiceKeyRow>;
  private readonly records: ServiceKeyRecords;
  private readonly gate: LoadGate;

  constructor(db: DbPool, cacheTtlMs = 5_000, options: KeyLookupOptions<ServiceKeyRecords> = {}) {
    this.records = options.records ?? new PostgresServiceKeyRecords(db);
    this.gate = keyLookupGate(options);
    this.cache = keyCache(cacheTtlMs, {
      maxEntries: MAX_CACHED_KEYS,
      maxBytes: MAX_CACHED_BYTES,
    });
  }

  async authenticate(
    headers: Readonly<Record<string, string>>,
    scope: ServiceKeyScope,
  ): Promise<ServiceKeyIdentity | GwError> {
    const presented = presentedSecretOf(headers, 'service_key');
    if (isGwError(presented)) return presented;
    const { raw, kind } = presented;
    if (kind !== 'service_key') {
      return gwError(
        'gw_malformed_or_missing_service_key',
        kind === undefined
          ? 'the presented value is not a service key: service keys start with gw_svc_'
          : `these routes take a service key (gw_svc_…), not ${describeSecretKind(kind)}`,
      );
    }
    if (!SERVICE_KEY_FORMAT.test(raw)) {
      return gwError(
        'gw_malformed_or_missing_service_key',
        'malformed service key: expected gw_svc_ followed by 32 to 64 letters and digits',
      );
    }
    const found = await shedWhenGateFull(
      this.cache.get(sha256Hex(raw), (keyHash) =>
        this.gate.run(() => this.records.findByHash(keyHash)),
      ),
    );
    if (isGwError(found)) return found;
    const row = found.value;
    if (!row) return gwError('gw_unknown_service_key', 'unknown service key');
    if (row.status !== 'active') {
      return gwError('gw_service_key_inactive', `this service key is ${row.status}`);
    }
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) {
      return gwError('gw_service_key_inactive', 'this service key is expired');
    }
    if (!row.scopes.includes(scope)) {
      return gwError('gw_service_key_scope_required', `this route requires the ${scope} scope`);
    }
    return { keyId: row.id, orgId: row.org_id, scopes: row.scopes };
  }

  /** Forgets cached keys (after a status or scope change). */
  handleInvalidation(invalidation: CacheInvalidation): void {
    if (invalidation.kind === 'service-keys') this.cache.invalidateAll();
  }

  clearLocalCache(): void {
    this.cache.invalidateAll();
  }
}
