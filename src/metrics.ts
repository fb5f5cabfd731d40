// Prometheus metrics (GET /metrics): requests by route and status with their latency, and the
// usage writer's progress: rows written, failed writes, dead letters, and records still waiting
// in Redis; the settle spool: settles waiting on this instance's disk for Redis; and the
// webhook attempts.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'gw_http_requests_total',
    help: 'HTTP requests by route and status (499: the client went away first)',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'gw_http_request_duration_seconds',
    help: 'Time from the request to its last byte, by route',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly usageRowsWritten = new Counter({
    name: 'gw_usage_rows_written_total',
    help: 'Usage records the batch writer committed to Postgres',
    registers: [this.registry],
  });
  readonly usageWriteFailures = new Counter({
    name: 'gw_usage_write_failures_total',
    help: 'Failed batch writes to Postgres (retried; the records stay in Redis)',
    registers: [this.registry],
  });

  readonly usageDeadLetters = new Counter({
    name: 'gw_usage_dead_letters_total',
    help: 'Usage stream entries moved to usage_dead_letters (Postgres refused the row, or not a record); each needs an operator',
    registers: [this.registry],
  });
  readonly settleSpooled = new Counter({
    name: 'gw_settle_spooled_total',
    help: 'Settles that failed after the vendor answered and were written to the local settle spool',
    registers: [this.registry],
  });
  readonly settleSpoolReplayed = new Counter({
    name: 'gw_settle_spool_replayed_total',
    help: 'Spooled settles applied (or found already recorded) and retired from the spool',
    registers: [this.registry],
  });
  readonly settleSpoolPending = new Gauge({
    name: 'gw_settle_spool_pending',
    help: 'Spooled settles of this instance still waiting for Redis (not yet charged or recorded)',
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'gw_webhook_attempts_total',
    help: 'Webhook delivery attempts of this instance: delivered (2xx), refused (another status), no_answer (timeout, network, refused address)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  constructor(
    withProcessMetrics: boolean,
    /** Counts the usage records not yet in Postgres (read at each scrape). */
    pendingUsageRecords?: () => Promise<number>,
  ) {
    if (withProcessMetrics) collectDefaultMetrics({ register: this.registry });
    if (pendingUsageRecords) {
      new Gauge({
        name: 'gw_usage_records_pending',
        help: 'Usage records settled in Redis and not yet written to Postgres (every org); rising: Postgres is slow or down',
        registers: [this.registry],
        // Every worker counts the same Redis streams: the cluster's value is one of them.
        aggregator: 'max',
        async collect() {
          // Redis unreachable: the scrape still answers, with the last value counted.
          const pending = await pendingUsageRecords().catch(() => undefined);
          if (pending !== undefined) this.set(pending);
        },
      });
    }
  }

  requestFinished(route: string, status: number, durationMs: number): void {
    this.requests.inc({ route, status: String(status) });
    this.latency.observe({ route }, durationMs / 1000);
  }
}
