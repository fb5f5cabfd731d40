// Composition root: builds the adapters from the parsed config, wires the services, starts
// the server, and shuts it all down in order on SIGTERM. Nothing else constructs
// infrastructure. The process entry is src/main.ts, which loads this module only in a
// process that serves requests (a primary over workers never does).
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import { DashboardAuthenticator } from './accounts/dashboard-auth.js';
import { LoginThrottle } from './accounts/login-throttle.js';
import { SessionStore } from './accounts/sessions.js';
import { Closers } from './closers.js';
import { openPostgres } from './composition/postgres.js';
import { openRedis } from './composition/redis.js';
import { startObservability } from './composition/observability.js';
import { buildStores } from './composition/stores.js';
import { startInference, type ExtraProvider } from './composition/inference.js';
import type { Config } from './config.js';
import { createDbPool, IDLE_IN_TRANSACTION_MS, type DbPool } from './db/pool.js';
import { CredentialError, CredentialStore } from './credentials/credential-store.js';
import { parseMasterKeys } from './credentials/secret-box.js';
import { createRequestLog } from './http/request-log.js';
import { LoopLag } from './http/loop-lag.js';
import { createHttpServer } from './http/server.js';
import { loadNativeUws } from './http/uws.js';
import { UsageWriterThread } from './ledger/usage-writer-thread.js';
import { RecordedUsage } from './ledger/recorded-usage.js';
import { SettleSpool } from './billing/settle-spool.js';
import { LostRequestRecovery } from './billing/lost-requests.js';
import { ShutdownCut } from './inference/shutdown-cut.js';
import { createRequestLogger, type Logger } from './log.js';
import { GatewayMetrics } from './metrics.js';
import { LiveBalanceReader } from './product-users/live-balance.js';
import { ProductUserManagement } from './product-users/management.js';
import { ProductUserProfiles } from './product-users/profile.js';
import type { Provider } from './providers/common/provider.js';
import type { SystemRoutes } from './providers/system-routes.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { OAuthClientAuthenticator } from './oauth/client-auth.js';
import { AuthorizationCodes, CODE_REPLAY_WINDOW_MS } from './oauth/codes.js';
import { bindRoutes } from './routes/framework/bind.js';
import type { Authenticators } from './routes/framework/declaration.js';
import type { ReadinessProbe } from './routes/readyz.js';
import { capInvalidation } from './admin/caps.js';
import { firingCapMarks } from './usage-events/cap-marks.js';
import { serviceKeyInvalidation } from './admin/service-keys.js';
import { metricsRoute, routeDeclarations, type RouteDeps } from './routes/index.js';
import { loadDashboardBundle } from './routes/dashboard-ui/bundle.js';
import { announceExpiredGrants } from './product-users/grant-expiry.js';
import { DeliveryClient } from './webhooks/delivery-client.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import type { WebhookSettings } from './webhooks/endpoints.js';
import { deleteOldMessages } from './webhooks/retention.js';
import { isGatewayWorker, localDashboardUrl, reportWorkerListening } from './workers.js';

/** The writer's final drain at shutdown; what it cannot write stays in Redis for the others. */
const WRITER_STOP_TIMEOUT_MS = 15_000;
/**
 * After the grace, the requests cut then settle (Redis, a token count): this bounds the wait.
 * What is still in flight after it (a stuck Redis) lapses by its hold's TTL, unrecorded.
 */
const CUT_SETTLE_TIMEOUT_MS = 5_000;

export interface RunningGateway {
  readonly port: number;
  /** This process's metrics (served on METRICS_PORT, or by the primary over the workers). */
  readonly metricsRegistry: Registry;
  /** Graceful stop: stop accepting, drain in-flight requests, flush usage, close everything. */
  stop(): Promise<void>;
}

export type { ExtraProvider } from './composition/inference.js';

export interface GatewayOptions {
  /** Providers to serve beside the registered ones (the tests' own vendors). */
  readonly extraProviders?: readonly ExtraProvider[];
  /** False in a worker: the primary serves /metrics for all of them. */
  readonly serveMetrics?: boolean;
}

export async function startGateway(
  config: Config,
  logger: Logger,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const closers = new Closers();
  try {
    return await assembleGateway(config, logger, options, closers);
  } catch (error) {
    // Start-up failed halfway: close what did start, then report the original failure.
    await closers.closeAll(logger).catch(() => undefined);
    throw error;
  }
}

async function assembleGateway(
  config: Config,
  logger: Logger,
  options: GatewayOptions,
  closers: Closers,
): Promise<RunningGateway> {
  loadNativeUws(); // refuse the pure-JS fallback before anything else starts

  const db = await openPostgres(config, closers);
  const redisConnections = await openRedis(config, logger, closers);
  const { target, client: redis, keys, scripts } = redisConnections;

  // The upstream client's line is read only by a scrape, once the gateway listens.
  const { metrics, checkDependencies } = startObservability(
    config,
    db,
    redisConnections,
    () => upstream.waiting(),
    closers,
  );
  const {
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
  } = await buildStores(config, logger, db, redisConnections, metrics);
  const { tokenCounter, upstream, providers, systemRoutes, catalog } = await startInference(
    config,
    logger,
    db,
    options.extraProviders ?? [],
    closers,
  );

  // Requests this instance leaves unsettled (at the end of a drain, or at all, if killed)
  // are recorded by the others from their drafts once their holds lapse.
  let unsettledAtExit = 0;
  const lostRequests = closers.add(
    'lost-request recovery',
    new LostRequestRecovery(redis, keys, budget, logger, {
      instanceId,
      deadAfterMs: config.INSTANCE_DEAD_AFTER_MS,
      recorded: metrics.lostRequestsRecorded,
    }),
    (recovery) => recovery.stop(unsettledAtExit === 0),
  );
  await lostRequests.start();
  const writer = new UsageWriterThread(
    {
      redis: target,
      databaseUrl: config.DATABASE_URL,
      writeTimeoutMs: config.USAGE_WRITE_TIMEOUT_MS,
      redisTimeoutMs: config.REDIS_TIMEOUT_MS,
      keyPrefix: config.REDIS_KEY_PREFIX,
      logLevel: config.LOG_LEVEL,
      options: {
        consumerName: `gw-${process.pid}-${randomUUID().slice(0, 8)}`,
        batchMaxRows: config.USAGE_BATCH_MAX_ROWS,
        flushIntervalMs: config.USAGE_FLUSH_INTERVAL_MS,
        claimIdleMs: config.USAGE_CLAIM_IDLE_MS,
      },
    },
    metrics,
    logger,
  );
  writer.start();
  closers.add('usage writer', writer, (thread) => thread.stop(WRITER_STOP_TIMEOUT_MS));

  const settleSpool = new SettleSpool(
    { dir: config.SPOOL_DIR, namespace: config.REDIS_KEY_PREFIX },
    {
      budget,
      recorded: new RecordedUsage(redis, db, keys),
      redisReady: () => redis.status === 'ready',
      logger,
      counters: metrics,
    },
  );
  await settleSpool.open();
  settleSpool.start();
  closers.add('settle spool', settleSpool, (spool) => spool.stop());
  redis.on('ready', () => void settleSpool.replay());

  const webhooks = closers.add(
    'webhooks',
    startWebhooks(config, secretBox, metrics, logger),
    (started) => started.stop(),
  );

  let draining = false;
  const services = {
    catalog,
    productUsers,
    capPolicies,
    credentials,
    tokenCounter,
    budget,
    settleSpool,
  };
  const shutdownCut = new ShutdownCut();
  const proxyDeps = {
    services,
    upstream,
    systemRoutes,
    logger,
    shutdown: shutdownCut,
    settledCounter: metrics,
    unpricedTierCounter: metrics,
  };
  const readiness: ReadinessProbe = {
    check: checkDependencies,
    essential: ['redis'],
    isDraining: () => draining,
  };
  // /metrics has its own listener (METRICS_HOST:METRICS_PORT, loopback by default), never
  // the public port.
  const servedRoutes = routeDeclarations.filter((route) => route !== metricsRoute);
  const sessions = new SessionStore(redis, keys, {
    idleMs: config.DASHBOARD_SESSION_IDLE_MS,
    absoluteMs: config.DASHBOARD_SESSION_MAX_MS,
    insecureCookies: config.DASHBOARD_INSECURE_COOKIES,
  });
  const oauthClients = new OAuthClientAuthenticator(db);
  const dashboardAuth = new DashboardAuthenticator(db, sessions, {
    // The origin users reach the gateway at is its own, whatever Host a proxy passes on.
    allowedOrigins: [
      ...(config.PUBLIC_ORIGIN === undefined ? [] : [config.PUBLIC_ORIGIN]),
      ...config.DASHBOARD_ALLOWED_ORIGINS,
    ],
    insecure: config.DASHBOARD_INSECURE_COOKIES,
  });
  const routeDeps: RouteDeps = {
    accounts: {
      db,
      sessions,
      throttle: new LoginThrottle(redis, keys),
      signup: config.DASHBOARD_SIGNUP,
    },
    proxy: proxyDeps,
    catalog,
    tokenCounter,
    db,
    apiKeys,
    serviceKeys: serviceKeyInvalidation(redis, keys, serviceKeys),
    caps: firingCapMarks(capInvalidation(redis, keys, { capPolicies, apiKeys }), {
      db,
      redis,
      keys,
    }),
    wallets,
    dashboardSettings: { walletTopUp: config.DASHBOARD_WALLET_TOPUP },
    // Validated against the vendor's system route (the built-in mock where it serves).
    credentialStore: new CredentialStore(
      db,
      redis,
      keys,
      secretBox,
      (provider) => {
        const route = systemRoutes[provider];
        if (!route) {
          throw new CredentialError(`${provider} is not served by this gateway (no route to it)`);
        }
        return route.baseUrl;
      },
      credentials,
    ),
    productUsers: {
      db,
      profiles: new ProductUserProfiles(db, new LiveBalanceReader(redis, keys, loader)),
      management: new ProductUserManagement(db, redis, keys, scripts),
    },
    webhooks: { db, settings: webhooks.settings },
    oauth: {
      db,
      codes: new AuthorizationCodes(redis, keys, scripts, {
        ttlMs: config.OAUTH_CODE_TTL_MS,
        replayWindowMs: CODE_REPLAY_WINDOW_MS,
      }),
      apiKeys,
      issuer: {
        publicOrigin: config.PUBLIC_ORIGIN,
        insecure: config.DASHBOARD_INSECURE_COOKIES,
      },
    },
    readiness,
    metricsRegistry: metrics.registry,
    openApiDocument: buildOpenApiDocument(servedRoutes),
    dashboardBundle: loadDashboardBundle(),
  };
  const authenticators: Authenticators = {
    apiKey: (headers) => apiKeys.authenticate(headers),
    serviceKey: (headers, scope) => serviceKeys.authenticate(headers, scope),
    session: (head, options) => dashboardAuth.session(head, options),
    orgMember: (head, role, org) => dashboardAuth.orgMember(head, role, org),
    dashboardVisitor: (head) => dashboardAuth.visitor(head),
    oauthClient: (headers, form) => oauthClients.authenticate(headers, form),
  };
  // Load shedding (decision 335): off unless SHED_LOOP_DELAY_MS is set.
  const loopLag =
    config.SHED_LOOP_DELAY_MS > 0
      ? closers.add('loop lag', new LoopLag(), (lag) => lag.stop())
      : undefined;
  const server = createHttpServer({
    maxBodyBytes: config.MAX_BODY_BYTES,
    logger,
    ...(loopLag && {
      overloaded: () => loopLag.lateMs() > config.SHED_LOOP_DELAY_MS,
      onShed: () => metrics.requestsShed.inc(),
    }),
    onRequestFinished: (route, status, durationMs) =>
      metrics.requestFinished(route, status, durationMs),
    requestLog: createRequestLog(createRequestLogger(logger), config.REQUEST_LOG_SAMPLE_RATE),
    routes: bindRoutes(servedRoutes, routeDeps, authenticators),
  });
  const port = await server.listen(config.HOST, config.PORT);
  closers.add('public listener', server, (listener) => listener.stopAccepting());
  const metricsServer =
    config.METRICS_ENABLED && options.serveMetrics !== false
      ? createHttpServer({
          maxBodyBytes: 1024,
          logger,
          routes: bindRoutes([metricsRoute], routeDeps, authenticators),
        })
      : undefined;
  const metricsPort = await metricsServer?.listen(config.METRICS_HOST, config.METRICS_PORT);
  if (metricsServer) closers.add('metrics listener', metricsServer, (l) => l.stopAccepting());
  logger.info(
    {
      port,
      dashboard: localDashboardUrl(config.HOST, port),
      ...(metricsPort !== undefined && { metricsPort }),
      ...routeLabels(providers, systemRoutes),
    },
    'gw listening',
  );

  return {
    port,
    metricsRegistry: metrics.registry,
    async stop() {
      draining = true;
      server.stopAccepting();
      metricsServer?.stopAccepting();
      const remaining = await server.whenIdle(config.SHUTDOWN_GRACE_MS);
      if (remaining > 0) {
        // Cut what outlasts the grace while everything a settle needs is still open: each is
        // settled as partial (`gateway_shutdown`) and its record goes out with the writer's
        // final drain below.
        logger.warn({ remaining }, 'shutdown grace elapsed: cutting the requests in flight');
        shutdownCut.cutAll();
        const unsettled = await server.whenIdle(CUT_SETTLE_TIMEOUT_MS);
        unsettledAtExit = unsettled;
        if (unsettled > 0) {
          logger.error({ unsettled }, 'requests still in flight after the cut; their holds lapse');
        }
      }
      await closers.closeAll(logger);
    },
  };
}

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
 * attempts are network waits) and the periodic sweep (credit-grant expiries, old messages).
 * WEBHOOK_DELIVERY_CONCURRENCY=0 leaves both to the other instances.
 */
function startWebhooks(
  config: Config,
  secretBox: ReturnType<typeof parseMasterKeys>,
  metrics: GatewayMetrics,
  logger: Logger,
): { settings: WebhookSettings; stop(): Promise<void> } {
  const policy = {
    allowHttp: config.WEBHOOK_ALLOW_HTTP,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  };
  const settings: WebhookSettings = { policy, box: secretBox };
  const concurrency = config.WEBHOOK_DELIVERY_CONCURRENCY;
  if (concurrency === 0) return { settings, stop: () => Promise.resolve() };
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
    })()
      .catch((error: unknown) => logger.warn({ err: error }, 'webhook sweep failed'))
      .finally(() => (sweeping = undefined));
  }, config.WEBHOOK_SWEEP_INTERVAL_MS);
  sweepTimer.unref();
  return {
    settings,
    async stop() {
      clearInterval(sweepTimer);
      await dispatcher.stop();
      await sweeping;
      await client.close();
      await db.end();
    },
  };
}

/** Each provider's route for the start-up log: vendor_a → vendorA: 'configured'. */
function routeLabels(providers: readonly Provider[], routes: SystemRoutes): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const { id } of providers) {
    const route = routes[id];
    const key = id.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
    labels[key] = route === undefined ? 'unconfigured' : route.mock ? 'mock' : 'configured';
  }
  return labels;
}

/** Runs this process as the gateway (alone, or as one worker) until SIGTERM/SIGINT. */
export async function runGatewayProcess(config: Config, logger: Logger): Promise<void> {
  let gateway: RunningGateway;
  try {
    gateway = await startGateway(config, logger, { serveMetrics: !isGatewayWorker() });
  } catch (error) {
    logger.fatal({ err: error }, 'gw failed to start');
    process.exit(1);
  }
  if (isGatewayWorker()) reportWorkerListening(gateway.metricsRegistry, gateway.port);
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
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
}
