// Prometheus metrics (GET /metrics): requests by route and status with their latency, and the
// usage writer's progress: rows written, failed writes, dead letters, and records still waiting
// in Redis; the settle spool: settles waiting on this instance's disk for Redis; and the
// webhook attempts.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = this.counter(
    'gw_http_requests_total',
    'HTTP requests by route and status (499: the client went away first)',
    ['route', 'status'],
  );
  private readonly latency = new Histogram({
    name: 'gw_http_request_duration_seconds',
    help: 'Time from the request to its last byte, by route',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly usageRowsWritten = this.counter(
    'gw_usage_rows_written_total',
    'Usage records the batch writer committed to Postgres',
  );
  readonly usageWriteFailures = this.counter(
    'gw_usage_write_failures_total',
    'Failed batch writes to Postgres (retried; the records stay in Redis)',
  );

  readonly usageDeadLetters = this.counter(
    'gw_usage_dead_letters_total',
    'Usage stream entries moved to usage_dead_letters (Postgres refused the row, or not a record); each needs an operator',
  );
  readonly settleSpooled = this.counter(
    'gw_settle_spooled_total',
    'Settles that failed after the vendor answered and were written to the local settle spool',
  );
  readonly settleSpoolReplayed = this.counter(
    'gw_settle_spool_replayed_total',
    'Spooled settles applied (or found already recorded) and retired from the spool',
  );
  readonly settleSpoolPending = new Gauge({
    name: 'gw_settle_spool_pending',
    help: 'Spooled settles of this instance still waiting for Redis (not yet charged or recorded)',
    registers: [this.registry],
  });

  readonly webhookAttempts = this.counter(
    'gw_webhook_attempts_total',
    'Webhook delivery attempts of this instance: delivered (2xx), refused (another status), no_answer (timeout, network, refused address)',
    ['outcome'],
  );

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

  /** A counter in this registry (a method, so the fields above read as a table). */
  private counter<Label extends string = never>(
    name: string,
    help: string,
    labelNames: readonly Label[] = [],
  ): Counter<Label> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  requestFinished(route: string, status: number, durationMs: number): void {
    this.requests.inc({ route, status: String(status) });
    this.latency.observe({ route }, durationMs / 1000);
  }
}
