// Prometheus metrics (GET /metrics): requests by route and status with their latency, and the
// usage writer's progress: rows written, failed writes, dead letters, and records still waiting
// in Redis; the settle spool: settles waiting on this instance's disk for Redis; the webhook
// attempts and backlog; whether Redis and Postgres answer; the settled requests by vendor
// and end reason with what they cost, in nano-units of the currency; the calls vendors
// served at a tier gw does not price; and the token counts waiting for a thread, or refused.
//
// Every label is bounded by the code (routes, statuses, vendors, end reasons, currencies): no
// org, app, user, key or credential id ever becomes a label (one series per tenant would grow
// without bound). Per-org spend is the usage API's and the dashboard's (docs/operations.md).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { UsageRecord } from './ledger/usage-record.js';

/** A scrape never waits longer than this on Redis or Postgres: it reports the last value. */
const PROBE_TIMEOUT_MS = 2_000;

/** What is read from Redis and Postgres at each scrape. */
export interface ScrapeProbes {
  /** Counts the usage records not yet in Postgres. */
  readonly pendingUsageRecords?: () => Promise<number>;
  /** Each dependency (redis, postgres) and whether it answers. */
  readonly dependencies?: () => Promise<Record<string, boolean>>;
  /** Of the usage records not yet in Postgres, those left for a writer of a newer version. */
  readonly usageRecordsAwaitingNewerWriter?: () => Promise<number>;
  /** Webhook deliveries due and not yet attempted (every instance's). */
  readonly webhookDeliveriesDue?: () => Promise<number>;
  /** E-mails in the outbox, neither sent nor given up (every instance's; with SMTP_URL). */
  readonly emailOutboxPending?: () => Promise<number>;
  /** This worker's vendor calls waiting for a connection (UpstreamClient.waiting). */
  readonly upstreamWaiting?: () => number;
  /** This worker's token counts waiting for a counting thread (PiscinaTokenCounter.waiting). */
  readonly tokenCountsWaiting?: () => number;
}

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = this.counter(
    'gw_http_requests_total',
    'HTTP requests by route and status (499: the client went away first)',
    ['route', 'status'],
  );
  /** Which error each refusal was: a gateway 429 (gw_rate_limited) apart from a vendor's. */
  private readonly errors = this.counter(
    'gw_http_errors_total',
    'Error answers by route and error code (the error catalogue: bounded)',
    ['route', 'code'],
  );
  private readonly latency = new Histogram({
    name: 'gw_http_request_duration_seconds',
    help: 'Time from the request to its last byte, by route',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly requestsShed = this.counter(
    'gw_requests_shed_total',
    'New requests answered 503 at once while the event loop ran SHED_LOOP_DELAY_MS late (load shedding)',
  );
  readonly tokenCountsRefused = this.counter(
    'gw_token_counts_refused_total',
    'Requests answered 429 gw_concurrency_limited: their organization already had TOKEN_QUEUE_PER_ORG token counts waiting for this worker’s counting threads',
  );
  private readonly emails = this.counter(
    'gw_emails_total',
    'E-mails gw tried to send (verification, sign-up notice, password reset, webhook endpoint failing or disabled) by purpose and result (sent; retried: an attempt failed, tried again later; failed: refused for good; expired: given up, its link no longer works: see the log; dropped: not sent, its reader no longer holds the role in the organization it was addressed to)',
    ['purpose', 'result'],
  );
  /** One attempt's outcome (src/email/outbox-sender.ts); both labels are bounded by the code. */
  readonly mailSent = (
    purpose: string,
    result: 'sent' | 'failed' | 'retried' | 'expired' | 'dropped',
  ): void => {
    this.emails.inc({ purpose, result });
  };
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
  readonly accountRebuilds = this.counter(
    'gw_account_rebuilds_total',
    'Accounts rebuilt from the ledger because Redis did not have them (a new period, a lost key), by account and outcome (inexact: short by what the writer moved during the measurement, until gw reconcile --repair; gave_up: the request answered 503)',
    ['account', 'outcome'],
  );
  readonly accountRebuildRemeasures = this.counter(
    'gw_account_rebuild_remeasures_total',
    'Measurements of an account rebuild that could not be used and were taken again',
    ['account'],
  );
  /** How long each account-rebuild measurement took (one serves every rebuild of its org waiting). */
  readonly accountRebuildMeasurement = new Histogram({
    name: 'gw_account_rebuild_measurement_seconds',
    help: 'Time each account-rebuild measurement took: a ledger snapshot and a cut of the org stream, shared by every rebuild of the org waiting (the first requests of a period wait for it)',
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly settleSpooled = this.counter(
    'gw_settle_spooled_total',
    'Settles that failed after the vendor answered and were written to the local settle spool',
  );
  readonly settleSpoolReplayed = this.counter(
    'gw_settle_spool_replayed_total',
    'Spooled settles applied (or found already recorded) and retired from the spool',
  );
  readonly lostRequestsRecorded = this.counter(
    'gw_lost_requests_recorded_total',
    'Requests of dead instances this instance recorded as lost (gateway_lost, nothing charged) once their holds lapsed',
  );
  readonly settleSpoolPending = new Gauge({
    name: 'gw_settle_spool_pending',
    help: 'Spooled settles of this instance still waiting for Redis (not yet charged or recorded)',
    registers: [this.registry],
  });

  readonly webhookAttempts = this.counter(
    'gw_webhook_attempts_total',
    'Webhook delivery attempts of this instance: delivered (2xx), refused (another status), no_answer (timeout, network, refused address), not_sent (this instance cannot sign it: its master key)',
    ['outcome'],
  );

  private readonly settledRequests = this.counter(
    'gw_settled_requests_total',
    'Inference requests settled (charged and recorded, or spooled to be) by this instance, by vendor and end reason (docs/charging.md)',
    ['vendor', 'end_reason'],
  );
  private readonly vendorTierMismatches = this.counter(
    'gw_vendor_tier_mismatches_total',
    'Calls a vendor said it served at a tier gw does not price (a priority or flex tier, a fast speed, a pinned geography; usually the vendor account’s default), charged at the catalogue’s standard rates: one per field of the answer naming one, by provider, route (system: the gateway’s own account; byok: the org’s), field (service_tier, speed, inference_geo) and tier (a value the field does not know: other)',
    ['provider', 'route', 'field', 'tier'],
  );
  /** Exact sums (bigint nano-units) behind the cost counters, by their label values. */
  private readonly sellCostNano = new Map<string, bigint>();
  private readonly vendorCostNano = new Map<string, bigint>();

  constructor(
    withProcessMetrics: boolean,
    /** Counts the usage records not yet in Postgres (read at each scrape). */
    pendingUsageRecords?: () => Promise<number>,
    probes: Omit<ScrapeProbes, 'pendingUsageRecords'> = {},
  ) {
    if (withProcessMetrics) collectDefaultMetrics({ register: this.registry });
    this.registerCostCounter(
      'gw_settled_sell_cost_nano_total',
      'Sell-price cost of the requests this instance settled, in nano-units (1e-9) of the currency; route="system" is what wallets paid',
      this.sellCostNano,
    );
    this.registerCostCounter(
      'gw_settled_vendor_cost_nano_total',
      'Vendor-price cost of the requests this instance settled, in nano-units (1e-9) of the currency (route="byok": paid by the org’s own credential)',
      this.vendorCostNano,
    );
    if (pendingUsageRecords) {
      this.sharedCountGauge(
        'gw_usage_records_pending',
        'Usage records settled in Redis and not yet written to Postgres (every org); rising: Postgres is slow or down',
        pendingUsageRecords,
      );
    }
    const {
      dependencies,
      webhookDeliveriesDue,
      emailOutboxPending,
      upstreamWaiting,
      tokenCountsWaiting,
      usageRecordsAwaitingNewerWriter,
    } = probes;
    if (usageRecordsAwaitingNewerWriter) {
      this.sharedCountGauge(
        'gw_usage_records_awaiting_newer_writer',
        'Of gw_usage_records_pending, those a writer left for a writer of a newer version (they name fields it does not know); above 0 once a rollout is done: an older version still runs',
        usageRecordsAwaitingNewerWriter,
      );
    }
    if (dependencies) {
      new Gauge({
        name: 'gw_dependency_up',
        help: 'Whether a dependency answers this instance (1) or not (0), checked at each scrape as /readyz does',
        labelNames: ['dependency'] as const,
        registers: [this.registry],
        // Over the workers: down for one is down.
        aggregator: 'min',
        async collect() {
          const checks = await bounded(dependencies());
          if (checks === undefined) return; // a probe that hangs says nothing new
          for (const [dependency, up] of Object.entries(checks)) {
            this.set({ dependency }, up ? 1 : 0);
          }
        },
      });
    }
    if (upstreamWaiting) {
      this.instanceCountGauge(
        'gw_upstream_calls_waiting',
        'Vendor calls of this instance waiting for a connection: all UPSTREAM_CONNECTIONS to their vendor are busy (each live stream holds one)',
        upstreamWaiting,
      );
    }
    if (tokenCountsWaiting) {
      this.instanceCountGauge(
        'gw_token_counts_waiting',
        'Token counts of this instance waiting for a counting thread (every organization’s; TOKEN_WORKERS threads count one each at a time)',
        tokenCountsWaiting,
      );
    }
    if (emailOutboxPending) {
      this.sharedCountGauge(
        'gw_email_outbox_pending',
        'E-mails accepted and neither sent nor given up yet (every instance’s: the outbox); staying above 0: the SMTP server is unreachable or refuses the credentials',
        emailOutboxPending,
      );
    }
    if (webhookDeliveriesDue) {
      this.sharedCountGauge(
        'gw_webhook_deliveries_due',
        'Enabled webhook endpoints’ deliveries whose attempt is due and not yet made (every instance’s; the backlog)',
        webhookDeliveriesDue,
      );
    }
  }

  /**
   * A gauge counted at each scrape from what every instance and worker reads alike (Redis
   * streams, Postgres): the cluster's value is one of them. A count that fails or hangs
   * leaves the last value, so the scrape still answers.
   */
  private sharedCountGauge(name: string, help: string, count: () => Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      aggregator: 'max',
      async collect() {
        const value = await bounded(count());
        if (value !== undefined) this.set(value);
      },
    });
  }

  /** A gauge of this instance's own count, read at each scrape (the workers' values add up). */
  private instanceCountGauge(name: string, help: string, count: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }

  /** A counter in this registry (a method, so the fields above read as a table). */
  private counter<Label extends string = never>(
    name: string,
    help: string,
    labelNames: readonly Label[] = [],
  ): Counter<Label> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** How an account rebuild ended (src/billing/account-rebuild.ts). */
  readonly accountRebuilt = (
    account: string,
    outcome: 'installed' | 'inexact' | 'present' | 'gave_up',
    measurements: number,
  ): void => {
    this.accountRebuilds.inc({ account, outcome });
    if (measurements > 1) this.accountRebuildRemeasures.inc({ account }, measurements - 1);
  };

  /** One account-rebuild measurement's duration (src/billing/account-rebuild.ts). */
  readonly rebuildMeasured = (seconds: number): void => {
    this.accountRebuildMeasurement.observe(seconds);
  };

  requestFinished(
    route: string,
    status: number,
    durationMs: number,
    errorCode?: string | undefined,
  ): void {
    this.requests.inc({ route, status: String(status) });
    if (errorCode !== undefined) this.errors.inc({ route, code: errorCode });
    this.latency.observe({ route }, durationMs / 1000);
  }

  /** Counts a settled request and adds its costs (exactly, as bigints). */
  settled(record: UsageRecord): void {
    this.settledRequests.inc({ vendor: record.vendor, end_reason: record.endReason ?? 'unknown' });
    const key = `${record.currency}\u0000${record.route}`;
    this.sellCostNano.set(key, (this.sellCostNano.get(key) ?? 0n) + record.sellCostNano);
    this.vendorCostNano.set(key, (this.vendorCostNano.get(key) ?? 0n) + record.vendorCostNano);
  }

  /** Counts a tier a vendor served a call at that gw does not price (src/inference/unpriced-tiers.ts). */
  unpricedTierServed(
    provider: string,
    route: UsageRecord['route'],
    field: string,
    tier: string,
  ): void {
    this.vendorTierMismatches.inc({ provider, route, field, tier });
  }

  /**
   * A counter read from exact bigint sums at each scrape. Prometheus carries a float64: exact
   * to 2^53 nano-units (about 9 million of the currency) per label set and process lifetime,
   * then rounded by a few nano-units — the ledger stays the exact record.
   */
  private registerCostCounter(name: string, help: string, sums: Map<string, bigint>): void {
    new Counter({
      name,
      help,
      labelNames: ['currency', 'route'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [key, nano] of sums) {
          const [currency = '', route = ''] = key.split('\u0000');
          this.inc({ currency, route }, Number(nano));
        }
      },
    });
  }
}

/** The probe's value, or undefined when it fails or takes longer than PROBE_TIMEOUT_MS. */
async function bounded<T>(probe: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([probe.catch(() => undefined), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
