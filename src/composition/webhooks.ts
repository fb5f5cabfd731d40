// Start-up, webhooks on this instance: the settings the webhook routes check endpoints with,
// and (unless WEBHOOK_DELIVERY_CONCURRENCY=0) the dispatcher and its periodic sweep.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../credentials/secret-box.js';
import { createDbPool, IDLE_IN_TRANSACTION_MS, type DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics.js';
import { announceExpiredGrants } from '../product-users/grant-expiry.js';
import { DeliveryClient } from '../webhooks/delivery-client.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import type { WebhookSettings } from '../webhooks/endpoints.js';
import { deleteOldMessages } from '../webhooks/retention.js';
import { deleteExpiredIdempotencyKeys } from '../idempotency/store.js';

/**
 * The webhook dispatcher's own pool: one connection per attempt at once, and one for its
 * claims. An attempt's transaction is idle on the server for the whole HTTP attempt (up to
 * WEBHOOK_TIMEOUT_MS, 60 s at most): ended by the server's idle bound before the attempt is
 * recorded, the delivery would be attempted again at once with no retry step taken. So its
 * idle bound is the attempt's plus the usual minute.
 */
export function createWebhookDeliveryPool(
  config: Pick<Config, 'DATABASE_URL' | 'WEBHOOK_DELIVERY_CONCURRENCY' | 'WEBHOOK_TIMEOUT_MS'>,
): DbPool {
  return createDbPool(config.DATABASE_URL, config.WEBHOOK_DELIVERY_CONCURRENCY + 1, undefined, {
    idleInTransactionMs: config.WEBHOOK_TIMEOUT_MS + IDLE_IN_TRANSACTION_MS,
    applicationName: 'gw-webhooks',
  });
}

/**
 * Webhooks on this instance: the dispatcher (its own Postgres pool, on this event loop: its
 * attempts are network waits) and the periodic sweep (credit-grant expiries, old messages,
 * expired Idempotency-Keys), closed by `closers`. WEBHOOK_DELIVERY_CONCURRENCY=0 leaves both to the other instances.
 */
export function startWebhooks(
  config: Config,
  secretBox: SecretBox | undefined,
  metrics: GatewayMetrics,
  logger: Logger,
  closers: Closers,
): WebhookSettings {
  const policy = {
    allowHttp: config.WEBHOOK_ALLOW_HTTP,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  };
  const settings: WebhookSettings = { policy, box: secretBox };
  const concurrency = config.WEBHOOK_DELIVERY_CONCURRENCY;
  if (concurrency === 0) return settings;
  const db = createWebhookDeliveryPool(config);
  const client = new DeliveryClient(policy, config.WEBHOOK_TIMEOUT_MS);
  const dispatcher = new WebhookDispatcher(
    db,
    client,
    secretBox,
    {
      concurrency,
      retryScheduleS: config.WEBHOOK_RETRY_SCHEDULE,
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER_S * 1000,
      pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
    },
    logger,
    metrics,
  );
  dispatcher.start();
  let sweeping: Promise<void> | undefined;
  const sweepTimer = setInterval(() => {
    sweeping ??= (async () => {
      if ((await announceExpiredGrants(db)) > 0) dispatcher.wake();
      await deleteOldMessages(db, config.WEBHOOK_RETENTION_DAYS);
      await deleteExpiredIdempotencyKeys(db);
    })()
      .catch((error: unknown) => logger.warn({ err: error }, 'webhook sweep failed'))
      .finally(() => (sweeping = undefined));
  }, config.WEBHOOK_SWEEP_INTERVAL_MS);
  sweepTimer.unref();
  closers.add('webhooks', dispatcher, async (started) => {
    clearInterval(sweepTimer);
    await started.stop();
    await sweeping;
    await client.close();
    await db.end();
  });
  return settings;
}
