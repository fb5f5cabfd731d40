// One container, every core: GATEWAY_WORKERS gateway processes accept on one port. Each worker
// binds PORT itself with SO_REUSEPORT and the kernel spreads connections over them; the primary
// first checks that no other process holds PORT (unless LISTEN_REUSE_PORT), which the kernel
// would otherwise let share them. Workers share nothing a request needs to be exact: money lives in Redis, records in
// Postgres, caches are per process and dropped by the same pub/sub messages. The primary serves
// no request: it forks the workers, starts another when one dies, forwards SIGTERM so each drains
// its own streams, and serves /metrics summed over the workers.
import cluster, { type Worker } from 'node:cluster';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry, type PrometheusContentType, type Registry } from 'prom-client';
import type { Config } from './config.js';
import { nosniffHeaders } from './http/respond.js';
import type { Logger } from './log.js';

/** How long a dead worker's replacement waits, so a crash loop cannot spin the CPU. */
const RESTART_DELAY_MS = 1_000;
/** The message a worker sends its primary once it is listening. */
const LISTENING = 'gw:listening';

/** How many gateway processes to run: one when PORT is 0 (each would pick its own port). */
export function workerCount(config: Pick<Config, 'PORT' | 'GATEWAY_WORKERS'>): number {
  if (config.PORT === 0) return 1;
  return config.GATEWAY_WORKERS === 'auto' ? availableParallelism() : config.GATEWAY_WORKERS;
}

export function isGatewayWorker(): boolean {
  return cluster.isWorker;
}

/** In a worker: lets the primary's /metrics read this registry, and says the worker listens. */
/**
 * Where a browser on this machine opens the dashboard, for the startup line: a gateway on every
 * interface is reached at 127.0.0.1. Plain http: TLS, where there is any, ends in front of gw.
 */
export function localDashboardUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const shown = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `http://${shown}:${port}/dashboard/`;
}

export function reportWorkerListening(registry: Registry, port: number): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's answerer for the primary's metrics requests.
  new AggregatorRegistry<PrometheusContentType>();
  process.send?.({ type: LISTENING, port });
}

/**
 * Runs the primary until SIGTERM/SIGINT has drained every worker. Exits 1 if a worker dies
 * before it ever listened (bad config, port taken): restarting it could never help.
 */
export function runPrimary(config: Config, logger: Logger, count: number): void {
  const aggregator = new AggregatorRegistry<PrometheusContentType>();
  const workers = new Map<number, Worker>();
  const listening = new Set<number>();
  let stopping = false;
  let announced = false;

  const fork = (slot: number): void => {
    const worker = cluster.fork({ GATEWAY_WORKER_SLOT: String(slot) });
    workers.set(slot, worker);
    worker.on('message', (message: { type?: string; port?: number }) => {
      if (message?.type !== LISTENING) return;
      listening.add(slot);
      if (listening.size === count && !announced) {
        announced = true;
        logger.info(
          {
            port: message.port,
            workers: count,
            dashboard: localDashboardUrl(config.HOST, message.port ?? config.PORT),
          },
          'gw workers listening',
        );
      }
    });
    worker.on('exit', (code, signal) => {
      workers.delete(slot);
      if (stopping) {
        if (workers.size === 0) finish();
        return;
      }
      if (!listening.has(slot)) {
        logger.fatal({ slot, code, signal }, 'a gateway worker failed to start');
        return void stop(1);
      }
      listening.delete(slot);
      logger.error({ slot, code, signal }, 'a gateway worker died: starting another');
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, RESTART_DELAY_MS);
    });
  };

  let exitCode = 0;
  const metricsServer = config.METRICS_ENABLED
    ? serveClusterMetrics(aggregator, logger)
    : undefined;
  const finish = (): void => {
    if (metricsServer) metricsServer.close(() => process.exit(exitCode));
    else process.exit(exitCode);
  };
  const stop = (code: number): void => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    if (workers.size === 0) return finish();
    for (const worker of workers.values()) worker.process.kill('SIGTERM');
  };

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      logger.info({ signal }, 'shutting down the workers');
      stop(0);
    });
  }
  const forkAll = (): void => {
    for (let slot = 0; slot < count; slot += 1) fork(slot);
  };
  const refuse = (error: unknown, message: string): void => {
    logger.fatal({ err: error }, message);
    process.exit(1);
  };
  // The workers bind PORT with SO_REUSEPORT, which another process's socket with it would
  // silently share: unless that is wanted (LISTEN_REUSE_PORT), PORT must be free first.
  const portChecked = config.LISTEN_REUSE_PORT
    ? Promise.resolve()
    : bindOnce(config.HOST, config.PORT).catch((error: unknown) =>
        refuse(error, listenFailure(config.HOST, config.PORT, 'HOST', 'PORT')),
      );
  void portChecked.then(() => {
    if (stopping) return;
    if (!metricsServer) return forkAll();
    // The metrics listener next: a port another process holds stops the start, as it does for
    // a single process, rather than leaving a scraper reading that other process's numbers.
    metricsServer.once('error', (error) =>
      refuse(
        error,
        listenFailure(config.METRICS_HOST, config.METRICS_PORT, 'METRICS_HOST', 'METRICS_PORT'),
      ),
    );
    metricsServer.listen(config.METRICS_PORT, config.METRICS_HOST, () => {
      metricsServer.removeAllListeners('error');
      metricsServer.on('error', (error) => logger.error({ err: error }, 'metrics listener failed'));
      if (!stopping) forkAll();
    });
  });
}

/** Binds host:port without SO_REUSEPORT and lets it go: rejects if any socket holds the port. */
function bindOnce(host: string, port: number): Promise<void> {
  const probe = createNetServer();
  return new Promise((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * What a listener that could not bind says: the address and the variables that set it, so the
 * failure names its fix.
 */
export function listenFailure(
  host: string,
  port: number,
  hostVariable: string,
  portVariable: string,
): string {
  return `could not listen on ${host}:${port} (${hostVariable}:${portVariable}): another process has the port, or the address is not this machine's; set ${portVariable} to a free port`;
}

function serveClusterMetrics(
  aggregator: AggregatorRegistry<PrometheusContentType>,
  logger: Logger,
): Server {
  return createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    aggregator.clusterMetrics().then(
      (text) => {
        response
          .writeHead(200, { 'content-type': aggregator.contentType, ...nosniffHeaders })
          .end(text);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'collecting the workers’ metrics failed');
        response.writeHead(503).end();
      },
    );
  });
}
