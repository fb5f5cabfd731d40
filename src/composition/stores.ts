// Start-up, the stores the routes read and write: the money layer (src/billing/compose.ts),
// the authenticating key stores, the cached directories, and the subscription that drops
// their caches.
import { randomUUID } from 'node:crypto';
import { ApiKeyStore } from '../auth/api-key-store.js';
import { ServiceKeyStore } from '../auth/service-key-store.js';
import { CapPolicyStore } from '../billing/cap-policies.js';
import { createMoneyLayer, type MoneyLayer } from '../billing/compose.js';
import {
  invalidationPublisher,
  subscribeInvalidations,
  type InvalidationPublisher,
} from '../cache/invalidation.js';
import type { Config } from '../config.js';
import { CredentialDirectory } from '../credentials/credential-directory.js';
import { parseMasterKeys, type SecretBox } from '../credentials/secret-box.js';
import type { DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics.js';
import { ProductUserDirectory } from '../product-users/directory.js';
import type { RedisConnections } from './redis.js';

export interface Stores extends Pick<MoneyLayer, 'loader' | 'budget' | 'wallets'> {
  /** This gateway instance (named in its requests' in-flight drafts). */
  readonly instanceId: string;
  readonly apiKeys: ApiKeyStore;
  readonly serviceKeys: ServiceKeyStore;
  readonly capPolicies: CapPolicyStore;
  readonly productUsers: ProductUserDirectory;
  readonly credentials: CredentialDirectory;
  /** Seals BYOK credentials; undefined without CREDENTIALS_MASTER_KEY. */
  readonly secretBox: SecretBox | undefined;
  /** What a change announces itself through: applied to these caches, then published. */
  readonly invalidations: InvalidationPublisher;
}

/** The stores, built once; resolves when their caches listen for invalidations. */
export async function buildStores(
  config: Config,
  logger: Logger,
  db: DbPool,
  { client: redis, subscriber, keys, scripts }: RedisConnections,
  metrics: GatewayMetrics,
): Promise<Stores> {
  const apiKeys = new ApiKeyStore(db, redis, keys, config.AUTH_CACHE_TTL_MS);
  const instanceId = randomUUID();
  const { loader, budget, wallets } = createMoneyLayer({
    db,
    redis,
    keys,
    scripts,
    reservationTtlMs: config.RESERVATION_TTL_MS,
    instanceId,
    observeRebuilds: metrics.accountRebuilt,
    observeRebuildMeasurements: metrics.rebuildMeasured,
    logger,
  });
  const capPolicies = new CapPolicyStore(db);
  const productUsers = new ProductUserDirectory(db);
  const serviceKeys = new ServiceKeyStore(db);
  const secretBox = parseMasterKeys(
    config.CREDENTIALS_MASTER_KEY,
    config.CREDENTIALS_MASTER_KEY_ID,
    config.CREDENTIALS_PREVIOUS_KEYS,
  );
  const credentials = new CredentialDirectory(db, secretBox);
  if (!secretBox) {
    logger.warn('CREDENTIALS_MASTER_KEY is not set: BYOK provider credentials are not used');
  }
  // Caches dropped by pub/sub messages. Messages published while the subscriber was
  // disconnected are lost, so every cache is dropped whenever it connects again. A change made
  // on this instance drops them before it answers, not when its own message comes back.
  const invalidatedCaches = [apiKeys, capPolicies, productUsers, serviceKeys, credentials];
  const invalidations = invalidationPublisher(redis, keys.invalidationChannel(), invalidatedCaches);
  await subscribeInvalidations(subscriber, keys.invalidationChannel(), invalidatedCaches);
  return {
    instanceId,
    loader,
    budget,
    wallets,
    apiKeys,
    serviceKeys,
    capPolicies,
    productUsers,
    credentials,
    secretBox,
    invalidations,
  };
}
