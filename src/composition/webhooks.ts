// Start-up, webhooks on this instance: the settings the webhook routes check endpoints with,
// and (unless WEBHOOK_DELIVERY_CONCURRENCY=0) the dispatcher and its periodic sweep.
import { waitAtMost, type Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../credentials/secret-box.js';
import { createDbPool, IDLE_IN_TRANSACTION_MS, type DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { ShutdownState } from './shutdown-state.js';
import type { GatewayMetrics } from '../metrics.js';
import { announceExpiredGrants } from '../product-users/grant-expiry.js';
import type { MailOutbox } from '../email/outbox.js';
import { DeliveryClient } from '../webhooks/delivery-client.js';
import { EndpointNoticeMail } from '../webhooks/endpoint-notices.js';
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
  config: Pick<
    Config,
    'DATABASE_URL' | 'DATABASE_TIMEOUT_MS' | 'WEBHOOK_DELIVERY_CONCURRENCY' | 'WEBHOOK_TIMEOUT_MS'
  >,
): DbPool {
  // Each statement waits at most DATABASE_TIMEOUT_MS (2 s more for an answer that never
  // comes), as the request pool's: a connection cut off without a reset would otherwise hold
  // the dispatcher (its claims, so every delivery of this instance) and its stop for good
  // (decision 407). An attempt's COMMIT given up on leaves the delivery due: it is attempted
  // again, as any webhook may be (the same webhook-id).
  return createDbPool(
    config.DATABASE_URL,
    config.WEBHOOK_DELIVERY_CONCURRENCY + 1,
    config.DATABASE_TIMEOUT_MS,
    {
      idleInTransactionMs: config.WEBHOOK_TIMEOUT_MS + IDLE_IN_TRANSACTION_MS,
      applicationName: 'gw-webhooks',
    },
  );
}

/**
 * After its HTTP answer (or WEBHOOK_TIMEOUT_MS), how long an attempt under way at a drain may
 * take to be recorded before the stop gives it up (its delivery stays due).
 */
export const WEBHOOK_RECORD_WAIT_MS = 5_000;

/** How long a stop waits, from the drain's start, for the webhook work under way. */
export function webhookStopWaitMs(webhookTimeoutMs: number): number {
  return webhookTimeoutMs + WEBHOOK_RECORD_WAIT_MS;
}

/**
 * Webhooks on this instance: the dispatcher (its own Postgres pool, on this event loop: its
 * attempts are network waits) and the periodic sweep (credit-grant expiries, old messages,
 * expired Idempotency-Keys), closed by `closers`. WEBHOOK_DELIVERY_CONCURRENCY=0 leaves both to the other instances.
 * `mailOutbox` (SMTP_URL): where the dispatcher queues the mail telling an organization's
 * owners and admins that it disabled one of its endpoints; null: nobody is mailed.
 */
export function startWebhooks(
  config: Config,
  secretBox: SecretBox | undefined,
  metrics: GatewayMetrics,
  logger: Logger,
  closers: Closers,
  shutdown: Pick<ShutdownState, 'stopStarting'>,
  mailOutbox: MailOutbox | null = null,
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
  // src/config.ts requires PUBLIC_ORIGIN with SMTP_URL.
  const notices =
    mailOutbox && config.PUBLIC_ORIGIN !== undefined
      ? new EndpointNoticeMail(mailOutbox, {
          origin: config.PUBLIC_ORIGIN,
          disableAfterMs: config.WEBHOOK_DISABLE_AFTER_S * 1000,
          retentionDays: config.WEBHOOK_RETENTION_DAYS,
        })
      : undefined;
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
    notices,
  );
  dispatcher.start();
  let sweeping: Promise<void> | undefined;
  let stoppingSinceMs: number | undefined;
  const sweepTimer = setInterval(() => {
    sweeping ??= (async () => {
      if ((await announceExpiredGrants(db)) > 0) dispatcher.wake();
      if (stoppingSinceMs !== undefined) return;
      await deleteOldMessages(db, config.WEBHOOK_RETENTION_DAYS);
      if (stoppingSinceMs !== undefined) return;
      await deleteExpiredIdempotencyKeys(db);
    })()
      .catch((error: unknown) => logger.warn({ err: error }, 'webhook sweep failed'))
      .finally(() => (sweeping = undefined));
  }, config.WEBHOOK_SWEEP_INTERVAL_MS);
  sweepTimer.unref();
  // From the drain's start no attempt and no sweep step starts; the stop waits for those
  // under way until webhookStopWaitMs after it (each statement is bounded by the pool), and
  // leaves what is left to the next instance.
  const stopStarting = (): void => {
    stoppingSinceMs ??= Date.now();
    clearInterval(sweepTimer);
    dispatcher.stopStarting();
  };
  shutdown.stopStarting.push(stopStarting);
  closers.add('webhooks', dispatcher, async (started) => {
    stopStarting();
    const waitMs = webhookStopWaitMs(config.WEBHOOK_TIMEOUT_MS);
    const leftMs = (): number => stoppingSinceMs! + waitMs - Date.now();
    await started.stop(waitMs);
    if (sweeping) await waitAtMost(sweeping, leftMs());
    await waitAtMost(client.close(), leftMs());
    await waitAtMost(db.end(), leftMs());
  });
  return settings;
}
