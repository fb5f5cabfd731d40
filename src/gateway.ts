// Composition root: builds the adapters from the parsed config, wires the services, starts
// the server, and shuts it all down in order on SIGTERM. Nothing else constructs
// infrastructure. The process entry is src/main.ts, which loads this module only in a
// process that serves requests (a primary over workers never does).
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
import { drainThenClose, shutdownState } from './composition/drain.js';
import { startUsageRecording } from './composition/usage-recording.js';
import { startWebhooks } from './composition/webhooks.js';
import type { Config } from './config.js';
import { CredentialError, CredentialStore } from './credentials/credential-store.js';
import { createRequestLog } from './http/request-log.js';
import { LoopLag } from './http/loop-lag.js';
import { createHttpServer } from './http/server.js';
import { loadNativeUws } from './http/uws.js';
import { createRequestLogger, type Logger } from './log.js';
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
import { isGatewayWorker, localDashboardUrl, reportWorkerListening } from './workers.js';

export { createWebhookDeliveryPool } from './composition/webhooks.js';

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
  const { client: redis, keys, scripts } = redisConnections;

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

  const shutdown = shutdownState();
  const settleSpool = await startUsageRecording(
    config,
    logger,
    { db, redis: redisConnections, stores: { budget, instanceId }, metrics, shutdown },
    closers,
  );
  const webhookSettings = startWebhooks(config, secretBox, metrics, logger, closers);

  const services = {
    catalog,
    productUsers,
    capPolicies,
    credentials,
    tokenCounter,
    budget,
    settleSpool,
  };
  const proxyDeps = {
    services,
    upstream,
    systemRoutes,
    logger,
    shutdown: shutdown.cut,
    settledCounter: metrics,
    unpricedTierCounter: metrics,
  };
  const readiness: ReadinessProbe = {
    check: checkDependencies,
    essential: ['redis'],
    isDraining: () => shutdown.draining,
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
    webhooks: { db, settings: webhookSettings },
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
    stop: () => drainThenClose(config, logger, { server, metricsServer }, shutdown, closers),
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
