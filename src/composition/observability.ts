// Start-up, what the gateway reports on itself: the dependency checks behind /readyz and the
// scrape (gw_dependency_up), and the metrics.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import { createDbPool, type DbPool } from '../db/pool.js';
import { boundedDependencyChecks } from '../dependency-checks.js';
import { emailOutboxPending } from '../email/outbox.js';
import { pendingUsageRecords, usageRecordsAwaitingNewerWriter } from '../ledger/usage-backlog.js';
import { GatewayMetrics, type ScrapeProbes } from '../metrics.js';
import { pingAll } from '../redis/connect.js';
import { webhookDeliveriesDue } from '../webhooks/backlog.js';
import type { RedisConnections } from './redis.js';
import { POOL_END_WAIT_MS } from './postgres.js';

export interface Observability {
  readonly metrics: GatewayMetrics;
  /** Each dependency and whether it answered, within DEPENDENCY_CHECK_TIMEOUT_MS. */
  readonly checkDependencies: () => Promise<Record<string, boolean>>;
}

/**
 * The checks (their Postgres probe pool closed by `closers`) and the metrics. `inferenceQueues`
 * are read at each scrape only: the upstream client and the token counter they read are
 * started after the metrics, which the money layer reports to.
 */
export function startObservability(
  config: Config,
  db: DbPool,
  { client: redis, keys }: RedisConnections,
  inferenceQueues: Required<Pick<ScrapeProbes, 'upstreamWaiting' | 'tokenCountsWaiting'>>,
  closers: Closers,
): Observability {
  // What /readyz and the scrape (gw_dependency_up) check: every Redis master, and Postgres on
  // a connection of its own: on the request pool, a pool busy under load would read as
  // Postgres down (and fire its alert). Opened when a check runs, closed once idle.
  const probeDb = closers.add(
    'postgres probe',
    createDbPool(config.DATABASE_URL, 1, config.DATABASE_TIMEOUT_MS, {
      applicationName: 'gw-probe',
    }),
    (pool) => pool.end(),
    POOL_END_WAIT_MS,
  );
  const checkDependencies = boundedDependencyChecks(
    {
      redis: () => pingAll(redis),
      postgres: () => probeDb.query('SELECT 1').then(() => true),
    },
    config.DEPENDENCY_CHECK_TIMEOUT_MS,
  );
  const metrics = new GatewayMetrics(
    config.METRICS_ENABLED,
    () => pendingUsageRecords(redis, keys),
    {
      dependencies: checkDependencies,
      usageRecordsAwaitingNewerWriter: () => usageRecordsAwaitingNewerWriter(redis, keys),
      webhookDeliveriesDue: () => webhookDeliveriesDue(db),
      ...(config.SMTP_URL !== undefined && { emailOutboxPending: () => emailOutboxPending(db) }),
      ...inferenceQueues,
    },
  );
  return { metrics, checkDependencies };
}
