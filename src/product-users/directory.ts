// Finds or creates product users on the request path. One upsert in Postgres makes the first
// sight of a user atomic (concurrent first requests create exactly one row); an in-process
// LRU keeps the steady state off the database.
import type { DbPool } from '../db/pool.js';
import { newId, sha256Hex } from '../ids.js';
import type { ProductUserProfile } from './attribution.js';

export interface ResolveProductUser {
  readonly orgId: string;
  readonly appId: string;
  readonly appConnectionId: string;
  readonly externalUserId: string;
  readonly profile: ProductUserProfile;
}

export interface ResolvedProductUser {
  readonly id: string;
  readonly status: 'active' | 'blocked';
  readonly allowanceStartsAt: Date | null;
}

interface CacheEntry {
  readonly user: ResolvedProductUser;
  /** What we last wrote: a request whose profile or connection differs writes again. */
  readonly writtenFingerprint: string;
  readonly expiresAtMs: number;
}

/** The pub/sub message that makes every instance forget one cached product user. */
export function productUserInvalidation(appId: string, externalUserId: string): string {
  return `pu:${JSON.stringify([appId, externalUserId])}`;
}

export function emailHash(email: string): string {
  return `sha256:${sha256Hex(email.trim().toLowerCase())}`;
}

/** A digest of what a request would write: cached per user, so its size never depends on the input. */
function fingerprint(input: ResolveProductUser): string {
  return sha256Hex(
    JSON.stringify([
      input.appConnectionId,
      input.profile.displayName ?? null,
      input.profile.email ?? null,
      input.profile.metadata ?? null,
    ]),
  );
}

export class ProductUserDirectory {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly db: DbPool,
    private readonly maxCachedUsers = 200_000,
    /** A last resort: changes arrive by pub/sub invalidation, and all is dropped on reconnect. */
    private readonly cacheTtlMs = 300_000,
  ) {}

  async resolve(input: ResolveProductUser): Promise<ResolvedProductUser> {
    const cacheKey = `${input.appId}\u0000${input.externalUserId}`;
    const wanted = fingerprint(input);
    const now = Date.now();
    const cached = this.cache.get(cacheKey);
    if (cached && cached.expiresAtMs > now && cached.writtenFingerprint === wanted) {
      // Refresh LRU position.
      this.cache.delete(cacheKey);
      this.cache.set(cacheKey, cached);
      return cached.user;
    }
    const user = await this.upsert(input);
    this.cache.delete(cacheKey);
    this.cache.set(cacheKey, {
      user,
      writtenFingerprint: wanted,
      expiresAtMs: now + this.cacheTtlMs,
    });
    if (this.cache.size > this.maxCachedUsers) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    return user;
  }

  /** Applies an invalidation message received over pub/sub (status or anchor changed). */
  handleInvalidation(message: string): void {
    if (!message.startsWith('pu:')) return;
    const [appId, externalUserId] = JSON.parse(message.slice(3)) as [string, string];
    this.cache.delete(`${appId}\u0000${externalUserId}`);
  }

  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void {
    this.cache.clear();
  }

  private async upsert(input: ResolveProductUser): Promise<ResolvedProductUser> {
    const { profile } = input;
    const { rows } = await this.db.query<{
      id: string;
      status: 'active' | 'blocked';
      allowance_starts_at: Date | null;
    }>(
      `INSERT INTO product_users (id, org_id, app_id, external_user_id, display_name, email_hash,
                                  metadata, last_app_connection_id)
       VALUES ($1, $2, $3, $4, COALESCE($5, ''), $6, COALESCE($7::jsonb, '{}'::jsonb), $8)
       ON CONFLICT (app_id, external_user_id) DO UPDATE SET
         display_name = COALESCE($5, product_users.display_name),
         email_hash = COALESCE($6, product_users.email_hash),
         metadata = COALESCE($7::jsonb, product_users.metadata),
         last_app_connection_id = $8,
         updated_at = now()
       RETURNING id, status, allowance_starts_at`,
      [
        newId('pu'),
        input.orgId,
        input.appId,
        input.externalUserId,
        profile.displayName ?? null,
        profile.email !== undefined ? emailHash(profile.email) : null,
        profile.metadata !== undefined ? JSON.stringify(profile.metadata) : null,
        input.appConnectionId,
      ],
    );
    const row = rows[0]!;
    return { id: row.id, status: row.status, allowanceStartsAt: row.allowance_starts_at };
  }
}
