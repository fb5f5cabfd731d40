// Service-key authentication for the product-user management routes. Keys are stored as
// SHA-256 hashes, carry scopes, and are active, revoked, disabled or expired.
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { secretPrefixes, sha256Hex } from '../ids.js';

export type ServiceKeyScope = 'product_users:read' | 'product_users:write';

export interface ServiceKeyIdentity {
  readonly keyId: string;
  readonly orgId: string;
  readonly scopes: readonly string[];
}

interface ServiceKeyRow {
  id: string;
  org_id: string;
  scopes: string[];
  status: 'active' | 'revoked' | 'disabled';
  expires_at: Date | null;
}

const SERVICE_KEY_FORMAT = /^gw_svc_[0-9A-Za-z]{32,64}$/;

export class ServiceKeyStore {
  private readonly cache = new Map<string, { row: ServiceKeyRow | null; expiresAtMs: number }>();

  constructor(
    private readonly db: DbPool,
    private readonly cacheTtlMs = 5_000,
  ) {}

  async authenticate(
    headers: Readonly<Record<string, string>>,
    scope: ServiceKeyScope,
  ): Promise<ServiceKeyIdentity | GwError> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    const raw = match?.[1];
    if (!raw) {
      return gwError(
        'gw_malformed_or_missing_service_key',
        'missing service key: send Authorization: Bearer gw_svc_…',
      );
    }
    if (!raw.startsWith(secretPrefixes.serviceKey)) {
      return gwError(
        'gw_malformed_or_missing_service_key',
        'these routes take a service key (gw_svc_…), not an API key or token',
      );
    }
    if (!SERVICE_KEY_FORMAT.test(raw)) {
      return gwError('gw_malformed_or_missing_service_key', 'malformed service key');
    }
    const row = await this.lookup(sha256Hex(raw));
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
  handleInvalidation(message: string): void {
    if (message === 'service-keys') this.cache.clear();
  }

  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void {
    this.cache.clear();
  }

  private async lookup(keyHash: string): Promise<ServiceKeyRow | null> {
    const now = Date.now();
    const cached = this.cache.get(keyHash);
    if (cached && cached.expiresAtMs > now) return cached.row;
    const { rows } = await this.db.query<ServiceKeyRow>(
      'SELECT id, org_id, scopes, status, expires_at FROM service_keys WHERE key_hash = $1',
      [keyHash],
    );
    const row = rows[0] ?? null;
    if (row) this.cache.set(keyHash, { row, expiresAtMs: now + this.cacheTtlMs });
    return row;
  }
}
