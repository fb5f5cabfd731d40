// Shutdown, the drain itself: stop accepting, let the requests in flight finish within the
// grace, cut what outlasts it, then close everything last first; and the longest it can take.
// What it tells the parts started before it is their ShutdownState (shutdown-state.ts).
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { HttpServer } from '../http/server.js';
import type { Logger } from '../log.js';
import { STOP_WAIT_MS as EMAIL_STOP_WAIT_MS } from './email.js';
import { POOL_END_WAIT_MS } from './postgres.js';
import { REDIS_QUIT_WAIT_MS } from './redis.js';
import { WRITER_STOP_TIMEOUT_MS } from './usage-recording.js';
import { webhookStopWaitMs } from './webhooks.js';
import type { ShutdownState } from './shutdown-state.js';

/**
 * After the grace, the requests cut then settle (Redis, a token count): this bounds the wait.
 * What is still in flight after it (a stuck Redis) lapses by its hold's TTL, unrecorded.
 */
const CUT_SETTLE_TIMEOUT_MS = 5_000;

/**
 * The longest a stop can take after SIGTERM with these settings (decisions 400, 408). The
 * webhook and e-mail senders stop starting attempts when the drain begins, and their waits for
 * the attempts under way run from then, alongside the grace and the cut's settles: the e-mail
 * attempts (5 s, with SMTP_URL), the webhook attempts and a webhook sweep under way
 * (WEBHOOK_TIMEOUT_MS, then WEBHOOK_RECORD_WAIT_MS to record them). Then, one after another:
 * the settle spool's replay under way (REDIS_TIMEOUT_MS), the usage writer's final drain, the
 * lost-request recovery leaving the instance list (a Redis command: REDIS_TIMEOUT_MS), the two
 * Redis connections' QUITs and the Postgres pools' ends (two, and the e-mail sender's with
 * SMTP_URL: decision 463). Every other closer is local (a timer, a listener, worker threads).
 * An orchestrator's kill deadline must be above it.
 */
export function longestStopMs(
  config: Pick<
    Config,
    | 'SHUTDOWN_GRACE_MS'
    | 'SMTP_URL'
    | 'WEBHOOK_DELIVERY_CONCURRENCY'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'REDIS_TIMEOUT_MS'
  >,
): number {
  const requestsMs = config.SHUTDOWN_GRACE_MS + CUT_SETTLE_TIMEOUT_MS;
  const emailMs = config.SMTP_URL === undefined ? 0 : EMAIL_STOP_WAIT_MS;
  const webhooksMs =
    config.WEBHOOK_DELIVERY_CONCURRENCY === 0 ? 0 : webhookStopWaitMs(config.WEBHOOK_TIMEOUT_MS);
  return (
    Math.max(requestsMs, emailMs, webhooksMs) +
    config.REDIS_TIMEOUT_MS +
    WRITER_STOP_TIMEOUT_MS +
    config.REDIS_TIMEOUT_MS +
    2 * REDIS_QUIT_WAIT_MS +
    (config.SMTP_URL === undefined ? 2 : 3) * POOL_END_WAIT_MS
  );
}

/** The listeners a drain stops accepting on. */
export interface Listeners {
  readonly server: HttpServer;
  readonly metricsServer: HttpServer | undefined;
}

/** Graceful stop: stop accepting, drain in-flight requests, flush usage, close everything. */
export async function drainThenClose(
  config: Config,
  logger: Logger,
  { server, metricsServer }: Listeners,
  shutdown: ShutdownState,
  closers: Closers,
): Promise<void> {
  shutdown.draining = true;
  for (const stopStarting of shutdown.stopStarting) stopStarting();
  server.stopAccepting();
  metricsServer?.stopAccepting();
  const remaining = await server.whenIdle(config.SHUTDOWN_GRACE_MS);
  if (remaining > 0) {
    // Cut what outlasts the grace while everything a settle needs is still open: each is
    // settled as partial (`gateway_shutdown`) and its record goes out with the writer's
    // final drain below.
    logger.warn({ remaining }, 'shutdown grace elapsed: cutting the requests in flight');
    shutdown.cut.cutAll();
    const unsettled = await server.whenIdle(CUT_SETTLE_TIMEOUT_MS);
    shutdown.unsettledAtExit = unsettled;
    if (unsettled > 0) {
      logger.error({ unsettled }, 'requests still in flight after the cut; their holds lapse');
    }
  }
  await closers.closeAll(logger);
}
