// Typed cache invalidations and their wire form on the Redis pub/sub channel. Every instance
// subscribes once (subscribeInvalidations) and hands each decoded message to every cache;
// messages published while its subscriber was disconnected are lost, so every cache is
// cleared whenever the subscriber connects again (on a cluster, possibly to another node:
// src/redis/subscriber.ts). The wire strings are those earlier versions
// published, so instances of both versions understand each other during a rolling deploy.
import type { RedisClient } from '../redis/connect.js';
import type { Subscriber } from '../redis/subscriber.js';

export type CacheInvalidation =
  | { readonly kind: 'api-key'; readonly keyHash: string }
  | { readonly kind: 'all-api-keys' }
  | { readonly kind: 'service-keys' }
  | { readonly kind: 'caps' }
  | { readonly kind: 'credentials' }
  | {
      readonly kind: 'product-user';
      /** Absent in messages of versions before product users were per organization. */
      readonly orgId?: string;
      readonly appId: string;
      readonly externalUserId: string;
    };

/** A cache that follows the invalidation channel. */
export interface InvalidatedCache {
  handleInvalidation(invalidation: CacheInvalidation): void;
  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void;
}

const API_KEY_PREFIX = 'apikey:';
const PRODUCT_USER_PREFIX = 'pu:';

export function encodeInvalidation(invalidation: CacheInvalidation): string {
  switch (invalidation.kind) {
    case 'api-key':
      return `${API_KEY_PREFIX}${invalidation.keyHash}`;
    case 'all-api-keys':
      return `${API_KEY_PREFIX}*`;
    case 'service-keys':
      return 'service-keys';
    case 'caps':
      return 'caps';
    case 'credentials':
      return 'credentials';
    case 'product-user':
      return `${PRODUCT_USER_PREFIX}${JSON.stringify(
        invalidation.orgId === undefined
          ? [invalidation.appId, invalidation.externalUserId]
          : [invalidation.orgId, invalidation.appId, invalidation.externalUserId],
      )}`;
  }
}

/** The invalidation a message carries, or undefined for one this version does not know. */
export function decodeInvalidation(message: string): CacheInvalidation | undefined {
  if (message === 'service-keys' || message === 'caps' || message === 'credentials') {
    return { kind: message };
  }
  if (message === `${API_KEY_PREFIX}*`) return { kind: 'all-api-keys' };
  if (message.startsWith(API_KEY_PREFIX)) {
    return { kind: 'api-key', keyHash: message.slice(API_KEY_PREFIX.length) };
  }
  if (message.startsWith(PRODUCT_USER_PREFIX)) {
    try {
      const parsed: unknown = JSON.parse(message.slice(PRODUCT_USER_PREFIX.length));
      const strings =
        Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')
          ? (parsed as string[])
          : [];
      if (strings.length === 3) {
        const [orgId, appId, externalUserId] = strings as [string, string, string];
        return { kind: 'product-user', orgId, appId, externalUserId };
      }
      if (strings.length === 2) {
        const [appId, externalUserId] = strings as [string, string];
        return { kind: 'product-user', appId, externalUserId };
      }
    } catch {
      // not ours: ignored below
    }
  }
  return undefined;
}

/** Sends an invalidation to every instance over pub/sub (this one hears it too, later). */
export async function publishInvalidation(
  redis: Pick<RedisClient, 'publish'>,
  channel: string,
  invalidation: CacheInvalidation,
): Promise<void> {
  await redis.publish(channel, encodeInvalidation(invalidation));
}

/** What a change that must reach every instance's caches announces itself through. */
export interface InvalidationPublisher {
  /** Resolves once this instance's caches have applied it and the others have been told. */
  publish(...invalidations: readonly CacheInvalidation[]): Promise<void>;
}

/**
 * Applies each invalidation to `localCaches` (this process's own) at once, then publishes it
 * for the other instances. The instance that made a change answers its caller only after its
 * own caches forgot the old value: its echo over pub/sub may come back after the caller's next
 * request (decision 381). A process without caches of its own (the CLI) passes none.
 */
export function invalidationPublisher(
  redis: Pick<RedisClient, 'publish'>,
  channel: string,
  localCaches: readonly InvalidatedCache[] = [],
): InvalidationPublisher {
  return {
    async publish(...invalidations) {
      for (const invalidation of invalidations) {
        for (const cache of localCaches) cache.handleInvalidation(invalidation);
      }
      for (const invalidation of invalidations) {
        await publishInvalidation(redis, channel, invalidation);
      }
    },
  };
}

/** Subscribes `subscriber` (a connection used for nothing else) and feeds `caches`. */
export async function subscribeInvalidations(
  subscriber: Subscriber,
  channel: string,
  caches: readonly InvalidatedCache[],
): Promise<void> {
  await subscriber.subscribe(channel);
  subscriber.on('message', (receivedOn: string, message: string) => {
    if (receivedOn !== channel) return;
    const invalidation = decodeInvalidation(message);
    // An unknown message may come from a newer version: forgetting everything is always safe.
    for (const cache of caches) {
      if (invalidation) cache.handleInvalidation(invalidation);
      else cache.clearLocalCache();
    }
  });
  subscriber.on('ready', () => {
    for (const cache of caches) cache.clearLocalCache();
  });
}
