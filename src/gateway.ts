// Composition root: builds the adapters from the parsed config, wires the services, starts
// the server, and shuts it all down in order on SIGTERM. Each phase of start-up is a function
// of its own in src/composition/; `assembleGateway` below lists them in order. Nothing else
// constructs infrastructure. The process entry is src/main.ts, which loads this module only in
// a process that serves requests (a primary over workers never does).
import type { Registry } from 'prom-client';
import { Closers } from './closers.js';
import { StoppedWhileStarting } from './composition/dependency-wait.js';
import { openPostgres } from './composition/postgres.js';
import { openRedis } from './composition/redis.js';
import { startObservability } from './composition/observability.js';
import { buildStores } from './composition/stores.js';
import { startInference, type ExtraProvider } from './composition/inference.js';
import { drainThenClose } from './composition/drain.js';
import { shutdownState } from './composition/shutdown-state.js';
import { startUsageRecording } from './composition/usage-recording.js';
import { startWebhooks } from './composition/webhooks.js';
import { startEmail, type EmailSenderTiming } from './composition/email.js';
import { wireRoutes } from './composition/routes.js';
import { listen } from './composition/listeners.js';
import { usePasswordScryptN } from './accounts/passwords.js';
import type { Config } from './config.js';
import { loadNativeUws } from './http/uws.js';
import type { Logger } from './log.js';
import { isGatewayWorker, reportWorkerListening } from './workers.js';

export type { ExtraProvider } from './composition/inference.js';
export { createWebhookDeliveryPool } from './composition/webhooks.js';

export interface RunningGateway {
  readonly port: number;
  /** This process's metrics (served on METRICS_PORT, or by the primary over the workers). */
  readonly metricsRegistry: Registry;
  /** Graceful stop: stop accepting, drain in-flight requests, flush usage, close everything. */
  stop(): Promise<void>;
}

export interface GatewayOptions {
  /** Providers to serve beside the registered ones (the tests' own vendors). */
  readonly extraProviders?: readonly ExtraProvider[];
  /** False in a worker: the primary serves /metrics for all of them. */
  readonly serveMetrics?: boolean;
  /** The e-mail sender's waits, where not gw's own (tests: shorter, not waited out). */
  readonly emailSenderTiming?: Partial<EmailSenderTiming>;
  /**
   * Aborted when a stop is asked for before the gateway has started: a wait for Postgres or
   * Redis that has retried ends at once (`StoppedWhileStarting`) rather than run its course
   * (decision 426); a first attempt, bounded, is let finish (decision 384).
   */
  readonly stopStarting?: AbortSignal;
}

export async function startGateway(
  config: Config,
  logger: Logger,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const closers = new Closers();
  usePasswordScryptN(config.PASSWORD_SCRYPT_N);
  try {
    return await assembleGateway(config, logger, options, closers);
  } catch (error) {
    // Start-up failed halfway: close what did start, then report the original failure.
    await closers.closeAll(logger).catch(() => undefined);
    throw error;
  }
}

/**
 * The phases of start-up, in order: each awaits what it must before the next begins and
 * registers how to close what it started, so `closers` closes them last first.
 */
async function assembleGateway(
  config: Config,
  logger: Logger,
  options: GatewayOptions,
  closers: Closers,
): Promise<RunningGateway> {
  loadNativeUws(); // refuse the pure-JS fallback before anything else starts
  const db = await openPostgres(config, logger, closers, options.stopStarting);
  const redis = await openRedis(config, logger, closers, options.stopStarting);
  // The upstream client's line and the token counts waiting are read only by a scrape, once
  // the gateway listens.
  const observability = startObservability(
    config,
    db,
    redis,
    {
      upstreamWaiting: () => inference.upstream.waiting(),
      tokenCountsWaiting: () => inference.tokenCounter.waiting,
    },
    closers,
  );
  const { metrics } = observability;
  const stores = await buildStores(config, logger, db, redis, metrics);
  const inference = await startInference(
    config,
    logger,
    { db, metrics },
    options.extraProviders ?? [],
    closers,
  );
  const shutdown = shutdownState();
  const settleSpool = await startUsageRecording(
    config,
    logger,
    { db, redis, stores, metrics, shutdown },
    closers,
  );
  // E-mail first: the webhook dispatcher queues its disable notices in its outbox, and closes
  // (it is closed before the e-mail sender) while the sender still runs.
  const mailOutbox = startEmail(
    config,
    stores.secretBox,
    metrics,
    logger,
    closers,
    shutdown,
    options.emailSenderTiming,
  );
  const webhookSettings = startWebhooks(
    config,
    stores.secretBox,
    metrics,
    logger,
    closers,
    shutdown,
    mailOutbox,
  );
  const routes = wireRoutes(config, logger, {
    mailOutbox,
    db,
    redis,
    observability,
    stores,
    inference,
    settleSpool,
    webhookSettings,
    shutdown,
  });
  const listening = await listen(
    config,
    logger,
    metrics,
    routes,
    inference,
    options.serveMetrics !== false,
    closers,
  );
  return {
    port: listening.port,
    metricsRegistry: metrics.registry,
    stop: () => drainThenClose(config, logger, listening, shutdown, closers),
  };
}

/**
 * Runs this process as the gateway (alone, or as one worker) until SIGTERM/SIGINT. The signals
 * are taken from the start: one that arrives while the gateway is still starting (a deploy
 * that changed its mind) stops it as soon as it has started, drained and closed in order,
 * rather than killing it halfway with Node's default action.
 */
export async function runGatewayProcess(config: Config, logger: Logger): Promise<void> {
  let gateway: RunningGateway | undefined;
  let requested: string | undefined;
  let stopping = false;
  const starting = new AbortController();
  const shutdown = (signal: string): void => {
    requested ??= signal;
    if (gateway === undefined) starting.abort(); // ends a retrying wait for Postgres or Redis
    if (stopping || gateway === undefined) return;
    stopping = true;
    logger.info({ signal: requested }, 'shutting down');
    gateway.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    gateway = await startGateway(config, logger, {
      serveMetrics: !isGatewayWorker(),
      stopStarting: starting.signal,
    });
  } catch (error) {
    if (error instanceof StoppedWhileStarting) {
      // Nothing was serving: what had started is closed; a stop, not a failure.
      logger.info({ signal: requested, reason: error.message }, 'stopped before it started');
      process.exit(0);
    }
    logger.fatal({ err: error }, 'gw failed to start');
    process.exit(1);
  }
  if (isGatewayWorker()) reportWorkerListening(gateway.metricsRegistry, gateway.port);
  // a signal taken while starting
  if (requested !== undefined) shutdown(requested);
}
