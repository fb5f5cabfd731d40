// Finds or creates product users on the request path. One upsert in Postgres makes the first
// sight of a user atomic (concurrent first requests create exactly one row) and, in the same
// statement, queues its product_user.created webhook event; an in-process LRU keeps the steady
// state off the database.
import type { CacheInvalidation, InvalidatedCache } from '../cache/invalidation.js';
import { LocalCache } from '../cache/local-cache.js';
import type { DbPool } from '../db/pool.js';
import { newId, sha256Hex } from '../ids.js';
import { outboxMessage, queueMessagesSql } from '../webhooks/outbox.js';
import type { ProductUserProfile } from './attribution.js';
import { productUserObject } from './profile.js';

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
}

/**
 * A product user is one (organization, app, external id): an app's requests may be paid by
 * several organizations (OAuth connections), each with its own users.
 */
function cacheKeyOf(orgId: string, appId: string, externalUserId: string): string {
  return `${orgId}\u0000${appId}\u0000${externalUserId}`;
}

export function emailHash(email: string): string {
  return `sha256:${sha256Hex(email.trim().toLowerCase())}`;
}

/** A digest of what a request would write (the cache keeps 64 characters, not the metadata). */
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

export class ProductUserDirectory implements InvalidatedCache {
  private readonly cache: LocalCache<CacheEntry>;

  constructor(
    private readonly db: DbPool,
    maxCachedUsers = 200_000,
    /** A last resort: changes arrive by pub/sub invalidation, and all is dropped on reconnect. */
    cacheTtlMs = 300_000,
    maxCachedBytes = 128 * 1024 * 1024,
  ) {
    this.cache = new LocalCache({
      ttlMs: cacheTtlMs,
      negativeTtlMs: 0,
      maxEntries: maxCachedUsers,
      maxBytes: maxCachedBytes,
    });
  }

  async resolve(input: ResolveProductUser): Promise<ResolvedProductUser> {
    const wanted = fingerprint(input);
    const key = cacheKeyOf(input.orgId, input.appId, input.externalUserId);
    const entry = await this.cache.get(
      key,
      async () => ({ user: await this.upsert(input), writtenFingerprint: wanted }),
      {
        // A request whose profile or connection differs from what was last written writes.
        accept: (cached) => cached.writtenFingerprint === wanted,
        flightKey: `${key}\u0000${wanted}`,
      },
    );
    return entry!.user;
  }

  /** Applies an invalidation (status or anchor changed), this instance's own or a peer's. */
  handleInvalidation(invalidation: CacheInvalidation): void {
    if (invalidation.kind !== 'product-user') return;
    // A message of an older version does not name the organization: forget them all.
    if (invalidation.orgId === undefined) return this.cache.invalidateAll();
    this.cache.invalidate(
      cacheKeyOf(invalidation.orgId, invalidation.appId, invalidation.externalUserId),
    );
  }

  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void {
    this.cache.invalidateAll();
  }

  private async upsert(input: ResolveProductUser): Promise<ResolvedProductUser> {
    const { profile } = input;
    const id = newId('pu');
    const emailHashed = profile.email !== undefined ? emailHash(profile.email) : null;
    // The event of a first sight describes the row this statement inserts (when it does).
    const created = outboxMessage({
      orgId: input.orgId,
      type: 'product_user.created',
      data: productUserObject({
        id,
        org_id: input.orgId,
        app_id: input.appId,
        external_user_id: input.externalUserId,
        display_name: profile.displayName ?? '',
        email_hash: emailHashed,
        status: 'active',
        metadata: (profile.metadata as Record<string, unknown> | undefined) ?? {},
        allowance_starts_at: null,
        last_app_connection_id: input.appConnectionId,
      }),
    });
    const { rows } = await this.db.query<{
      id: string;
      status: 'active' | 'blocked';
      allowance_starts_at: Date | null;
    }>(
      `WITH upserted AS (
         INSERT INTO product_users (id, org_id, app_id, external_user_id, display_name, email_hash,
                                    metadata, last_app_connection_id)
         VALUES ($1, $2, $3, $4, COALESCE($5, ''), $6, COALESCE($7::jsonb, '{}'::jsonb), $8)
         ON CONFLICT (org_id, app_id, external_user_id) DO UPDATE SET
           display_name = COALESCE($5, product_users.display_name),
           email_hash = COALESCE($6, product_users.email_hash),
           metadata = COALESCE($7::jsonb, product_users.metadata),
           last_app_connection_id = $8,
           updated_at = now()
         RETURNING id, org_id, status, allowance_starts_at, (xmax = 0) AS inserted),
       webhook_source AS (
         SELECT $9::text AS id, u.org_id, 'product_user.created'::text AS event_type,
                $10::text AS payload, NULL::text AS dedupe_key, $11::text AS subject,
                1::bigint AS ord
           FROM upserted u WHERE u.inserted),
       ${queueMessagesSql('webhook_source')}
       SELECT id, status, allowance_starts_at FROM upserted`,
      [
        id,
        input.orgId,
        input.appId,
        input.externalUserId,
        profile.displayName ?? null,
        emailHashed,
        profile.metadata !== undefined ? JSON.stringify(profile.metadata) : null,
        input.appConnectionId,
        created.id,
        created.payload,
        created.subject,
      ],
    );
    const row = rows[0]!;
    return { id: row.id, status: row.status, allowanceStartsAt: row.allowance_starts_at };
  }
}
