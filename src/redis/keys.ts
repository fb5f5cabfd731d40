// Every Redis key the gateway uses is named here and nowhere else. All keys of one
// organization carry the hash tag {o:<org_id>} so each Lua script touches one cluster slot.

export interface RedisKeys {
  /** Org wallet account: hash { balance, reserved, r:<request_id> → held amount }. */
  wallet(orgId: string): string;
  /** Expiry index of the wallet's reservations: zset request_id → expiry (ms). */
  walletReservations(orgId: string): string;
  /** Marks a settled request (idempotency), with a TTL. */
  settled(orgId: string, requestId: string): string;
  /** The org's usage stream, drained into Postgres by the batch writer. */
  usageStream(orgId: string): string;
  /** Set of every usage stream key, so writers can find them. */
  usageStreamRegistry(): string;
  /** Cached API-key record by key hash (JSON), short TTL. */
  apiKey(keyHash: string): string;
  /** Pub/sub channel for cross-instance cache invalidation. */
  invalidationChannel(): string;
}

export function createRedisKeys(prefix: string): RedisKeys {
  const org = (orgId: string): string => `${prefix}:{o:${orgId}}`;
  return {
    wallet: (orgId) => `${org(orgId)}:wallet`,
    walletReservations: (orgId) => `${org(orgId)}:wallet:resv`,
    settled: (orgId, requestId) => `${org(orgId)}:settled:${requestId}`,
    usageStream: (orgId) => `${org(orgId)}:usage`,
    usageStreamRegistry: () => `${prefix}:usage-streams`,
    apiKey: (keyHash) => `${prefix}:apikey:${keyHash}`,
    invalidationChannel: () => `${prefix}:invalidate`,
  };
}

/** The consumer group every gateway instance's batch writer joins. */
export const USAGE_CONSUMER_GROUP = 'usage-writers';
