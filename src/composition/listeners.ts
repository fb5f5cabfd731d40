// Start-up, last: the public listener (with load shedding when configured), the metrics
// listener, and the line saying the gateway listens.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import { LoopLag } from '../http/loop-lag.js';
import { createRequestLog } from '../http/request-log.js';
import { createHttpServer } from '../http/server.js';
import { createRequestLogger, type Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics.js';
import type { Provider } from '../providers/common/provider.js';
import type { SystemRoutes } from '../providers/system-routes.js';
import { bindRoutes } from '../routes/framework/bind.js';
import { metricsRoute } from '../routes/index.js';
import { isGatewayWorker, listenFailure, localDashboardUrl } from '../workers.js';
import type { Listeners } from './drain.js';
import type { Inference } from './inference.js';
import type { WiredRoutes } from './routes.js';

export interface Listening extends Listeners {
  /** The public port (PORT, or the one the system gave for PORT=0). */
  readonly port: number;
}

/** Both listeners listening, each stopped accepting by `closers`. */
export async function listen(
  config: Config,
  logger: Logger,
  metrics: GatewayMetrics,
  routes: WiredRoutes,
  { providers, systemRoutes }: Pick<Inference, 'providers' | 'systemRoutes'>,
  serveMetrics: boolean,
  closers: Closers,
): Promise<Listening> {
  // Load shedding (decision 335): off unless SHED_LOOP_DELAY_MS is set.
  const loopLag =
    config.SHED_LOOP_DELAY_MS > 0
      ? closers.add('loop lag', new LoopLag(), (lag) => lag.stop())
      : undefined;
  const server = createHttpServer({
    maxBodyBytes: config.MAX_BODY_BYTES,
    logger,
    ...(config.TRUSTED_PROXIES && { trustedProxies: config.TRUSTED_PROXIES }),
    ...(loopLag && {
      overloaded: () => loopLag.lateMs() > config.SHED_LOOP_DELAY_MS,
      onShed: () => metrics.requestsShed.inc(),
    }),
    onRequestFinished: (route, status, durationMs, errorCode) =>
      metrics.requestFinished(route, status, durationMs, errorCode),
    requestLog: createRequestLog(createRequestLogger(logger), config.REQUEST_LOG_SAMPLE_RATE),
    routes: bindRoutes(routes.served, routes.deps, routes.authenticators, routes.idempotencyKeys),
  });
  // A worker shares PORT with its siblings (the primary found it free before forking them).
  const shared = config.LISTEN_REUSE_PORT || isGatewayWorker();
  const port = await server.listen(config.HOST, config.PORT, shared).catch(() => {
    throw new Error(listenFailure(config.HOST, config.PORT, 'HOST', 'PORT'));
  });
  closers.add('public listener', server, (listener) => listener.stopAccepting());
  const metricsServer =
    config.METRICS_ENABLED && serveMetrics
      ? createHttpServer({
          maxBodyBytes: 1024,
          logger,
          routes: bindRoutes([metricsRoute], routes.deps, routes.authenticators),
        })
      : undefined;
  const metricsPort = await metricsServer
    ?.listen(config.METRICS_HOST, config.METRICS_PORT)
    .catch(() => {
      throw new Error(
        listenFailure(config.METRICS_HOST, config.METRICS_PORT, 'METRICS_HOST', 'METRICS_PORT'),
      );
    });
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
  return { port, server, metricsServer };
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
