// The webhook dispatcher, one per gateway instance, on the main event loop: deliveries are
// network waits, not CPU, so a few concurrent attempts (WEBHOOK_DELIVERY_CONCURRENCY) cost the
// request path nothing measurable. Its Postgres connections are its own pool.
//
// An attempt runs inside a transaction that holds the endpoint's state row (FOR UPDATE SKIP
// LOCKED): one endpoint gets one attempt at a time from all instances together, its messages
// go in creation order (while it is healthy), and no two instances ever send one delivery at
// once. If the instance dies mid-attempt, Postgres ends its transaction and the delivery is
// still pending: another instance sends it (at least once; receivers dedupe on webhook-id).
import type { SecretBox } from '../credentials/secret-box.js';
import type { DbClient, DbPool } from '../db/pool.js';
import { recordAudit } from '../audit/audit.js';
import type { Logger } from '../log.js';
import type { AttemptResult, DeliveryClient } from './delivery-client.js';
import { ENDPOINT_COLUMNS, signingSecrets, type EndpointRow } from './endpoints.js';
import { retryDelayMs } from './retry-schedule.js';
import { webhookHeaders } from './signing.js';

export interface DispatcherSettings {
  /** Attempts in flight at once on this instance. */
  readonly concurrency: number;
  readonly retryScheduleS: readonly number[];
  /** An endpoint failing with no success for this long is disabled. */
  readonly disableAfterMs: number;
  /** How often an idle dispatcher looks for due deliveries. */
  readonly pollIntervalMs: number;
}

export interface DispatcherCounters {
  readonly webhookAttempts: { inc(labels: { outcome: string }): void };
}

interface ClaimedDelivery {
  readonly id: string;
  readonly message_id: string;
  readonly payload: string;
  readonly retry_step: number;
}

/** Who the audit log names for what the dispatcher does on its own. */
const SYSTEM_ACTOR = 'system';

export class WebhookDispatcher {
  private running = false;
  private inFlight = 0;
  private filling = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly attempts = new Set<Promise<void>>();

  constructor(
    /** Its own pool: an attempt holds a connection for up to the attempt timeout. */
    private readonly db: DbPool,
    private readonly client: DeliveryClient,
    private readonly box: SecretBox | undefined,
    private readonly settings: DispatcherSettings,
    private readonly logger: Logger,
    private readonly counters?: DispatcherCounters,
  ) {}

  start(): void {
    if (this.running || this.settings.concurrency === 0) return;
    this.running = true;
    this.wake();
  }

  /** Stops claiming; waits for the attempts in flight. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.attempts]);
  }

  /** Looks for due deliveries now (and then every poll interval while idle). */
  wake(): void {
    if (!this.running || this.filling) return;
    this.filling = true;
    clearTimeout(this.timer);
    void this.fill().finally(() => {
      this.filling = false;
      if (!this.running) return;
      this.timer = setTimeout(() => this.wake(), this.settings.pollIntervalMs);
      this.timer.unref();
    });
  }

  /** Starts attempts until every slot is busy or nothing is due. */
  private async fill(): Promise<void> {
    while (this.running && this.inFlight < this.settings.concurrency) {
      let claimed: boolean;
      try {
        claimed = await this.startOne();
      } catch (error) {
        this.logger.error({ err: error }, 'webhook dispatcher: claiming failed');
        return;
      }
      if (!claimed) return;
    }
  }

  /**
   * Claims an endpoint with a due delivery and starts its attempt; false when none is due.
   * The claim's transaction stays open (holding the endpoint) until the attempt is recorded.
   */
  private async startOne(): Promise<boolean> {
    const connection = await this.db.connect();
    let claimed: { endpoint: EndpointRow; delivery: ClaimedDelivery } | undefined;
    try {
      await connection.query('BEGIN');
      claimed = await claim(connection);
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => undefined);
      connection.release();
      throw error;
    }
    if (!claimed) {
      await connection.query('ROLLBACK').catch(() => undefined);
      connection.release();
      return false;
    }
    this.inFlight += 1;
    const attempt = this.attempt(connection, claimed.endpoint, claimed.delivery)
      .catch((error: unknown) => {
        this.logger.error(
          { err: error, endpointId: claimed.endpoint.id },
          'webhook attempt failed to record',
        );
      })
      .finally(() => {
        this.inFlight -= 1;
        this.attempts.delete(attempt);
        this.wake(); // a slot is free: more may be due
      });
    this.attempts.add(attempt);
    return true;
  }

  private async attempt(
    connection: DbClient,
    endpoint: EndpointRow,
    delivery: ClaimedDelivery,
  ): Promise<void> {
    let failed = true;
    try {
      const result = await this.send(endpoint, delivery);
      await this.record(connection, endpoint, delivery, result);
      await connection.query('COMMIT');
      failed = false;
      this.counters?.webhookAttempts.inc({ outcome: outcomeLabel(result) });
    } finally {
      if (failed) await connection.query('ROLLBACK').catch(() => undefined);
      // A connection whose transaction could not end is not given back to the pool.
      connection.release(failed);
    }
  }

  private async send(endpoint: EndpointRow, delivery: ClaimedDelivery): Promise<AttemptResult> {
    if (!this.box) {
      return {
        statusCode: null,
        latencyMs: 0,
        snippet: '',
        error: 'not sent: CREDENTIALS_MASTER_KEY is not set on this instance',
      };
    }
    const now = Date.now();
    let secrets: string[];
    try {
      secrets = signingSecrets(this.box, endpoint, now);
    } catch {
      return {
        statusCode: null,
        latencyMs: 0,
        snippet: '',
        error: 'not sent: the signing secret cannot be opened (master key)',
      };
    }
    const headers = webhookHeaders(delivery.message_id, delivery.payload, secrets, now);
    return this.client.post(endpoint.url, delivery.payload, headers);
  }

  /** The attempt's row, the delivery's next state and the endpoint's health, in the claim's transaction. */
  private async record(
    connection: DbClient,
    endpoint: EndpointRow,
    delivery: ClaimedDelivery,
    result: AttemptResult,
  ): Promise<void> {
    await connection.query(
      `INSERT INTO webhook_attempts (delivery_id, status_code, latency_ms, response_snippet, error)
       VALUES ($1, $2, $3, $4, $5)`,
      [delivery.id, result.statusCode, result.latencyMs, result.snippet, result.error],
    );
    const delivered =
      result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    if (delivered) {
      await connection.query(
        `UPDATE webhook_deliveries SET state = 'delivered', attempt_count = attempt_count + 1,
                last_attempt_at = now(), delivered_at = now()
          WHERE id = $1`,
        [delivery.id],
      );
      await connection.query(
        `UPDATE webhook_endpoint_states SET failing_since = NULL, last_attempt_at = now(),
                last_success_at = now()
          WHERE endpoint_id = $1`,
        [endpoint.id],
      );
      return;
    }
    const delayMs = retryDelayMs(this.settings.retryScheduleS, delivery.retry_step);
    // The delay counts from the failure: clock_timestamp(), not now(), which is when this
    // attempt's transaction began, before the receiver was called (up to its time-out earlier).
    await connection.query(
      `UPDATE webhook_deliveries SET
         state = CASE WHEN $2::bigint IS NULL THEN 'failed' ELSE 'pending' END,
         attempt_count = attempt_count + 1, retry_step = retry_step + 1, last_attempt_at = now(),
         next_attempt_at = CASE WHEN $2::bigint IS NULL THEN next_attempt_at
                                ELSE clock_timestamp() + $2::bigint * interval '1 millisecond' END
        WHERE id = $1`,
      [delivery.id, delayMs],
    );
    const { rows } = await connection.query<{ failing_since: Date }>(
      `UPDATE webhook_endpoint_states SET failing_since = COALESCE(failing_since, now()),
              last_attempt_at = now()
        WHERE endpoint_id = $1 RETURNING failing_since`,
      [endpoint.id],
    );
    const failingSince = rows[0]?.failing_since;
    const gone = result.statusCode === 410;
    const failingTooLong =
      failingSince !== undefined &&
      Date.now() - failingSince.getTime() >= this.settings.disableAfterMs;
    if (gone || failingTooLong) await this.disable(connection, endpoint, gone ? 'gone' : 'failing');
  }

  /** Disables an endpoint on its own (410, or failing for days), and says so in the audit log. */
  private async disable(
    connection: DbClient,
    endpoint: EndpointRow,
    reason: 'gone' | 'failing',
  ): Promise<void> {
    const { rowCount } = await connection.query(
      `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, disabled_at = now(),
              updated_at = now()
        WHERE id = $1 AND status = 'enabled'`,
      [endpoint.id, reason],
    );
    if (rowCount === 0) return;
    await recordAudit(connection, {
      orgId: endpoint.org_id,
      userId: SYSTEM_ACTOR,
      action: 'webhook.disable',
      objectType: 'webhook',
      objectId: endpoint.id,
      details: { reason },
    });
    this.logger.warn(
      { endpointId: endpoint.id, orgId: endpoint.org_id, reason },
      'webhook endpoint disabled',
    );
  }
}

/**
 * Locks one enabled endpoint that has a due delivery (the one attempted longest ago first, so
 * endpoints take turns) and picks its oldest due delivery. Locked endpoints are skipped: another
 * instance is sending to them.
 */
async function claim(
  connection: DbClient,
): Promise<{ endpoint: EndpointRow; delivery: ClaimedDelivery } | undefined> {
  const { rows: endpoints } = await connection.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS}
       FROM webhook_endpoint_states s JOIN webhook_endpoints e ON e.id = s.endpoint_id
      WHERE e.status = 'enabled'
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
                     WHERE d.endpoint_id = s.endpoint_id AND d.state = 'pending'
                       AND d.next_attempt_at <= now())
      ORDER BY s.last_attempt_at NULLS FIRST
      LIMIT 1
      FOR UPDATE OF s SKIP LOCKED`,
  );
  const endpoint = endpoints[0];
  if (!endpoint) return undefined;
  const { rows: deliveries } = await connection.query<ClaimedDelivery>(
    `SELECT d.id::text, d.message_id, m.payload, d.retry_step
       FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.endpoint_id = $1 AND d.state = 'pending' AND d.next_attempt_at <= now()
      ORDER BY d.message_seq
      LIMIT 1
      FOR UPDATE OF d`,
    [endpoint.id],
  );
  const delivery = deliveries[0];
  return delivery ? { endpoint, delivery } : undefined;
}

function outcomeLabel(result: AttemptResult): string {
  if (result.statusCode === null) return 'no_answer';
  if (result.statusCode >= 200 && result.statusCode < 300) return 'delivered';
  return 'refused';
}
