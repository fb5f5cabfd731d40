// The webhook dispatcher, one per gateway instance, on the main event loop: deliveries are
// network waits, not CPU, so a few concurrent attempts (WEBHOOK_DELIVERY_CONCURRENCY) cost the
// request path nothing measurable. Its Postgres connections are its own pool.
//
// An endpoint's deliveries go out on its lanes (8; a message's lane is a hash of its subject,
// docs/decisions.md 317). An attempt runs inside a transaction that holds its lane's row (FOR
// UPDATE SKIP LOCKED): a lane gets one attempt at a time from all instances together, so the
// messages about one subject go in creation order (while the endpoint is healthy), an endpoint
// gets up to 8 at once, and no two instances ever send one delivery at once. If the instance
// dies mid-attempt, Postgres ends its transaction and the delivery is still pending: another
// instance sends it (at least once; receivers dedupe on webhook-id).
import type { SecretBox } from '../credentials/secret-box.js';
import type { DbClient, DbPool } from '../db/pool.js';
import { recordAudit } from '../audit/audit.js';
import type { Logger } from '../log.js';
import type { AttemptResult, DeliveryClient } from './delivery-client.js';
import {
  FAILING_WARNING_AFTER_MS,
  type AutomaticDisableReason,
  type EndpointNotices,
} from './endpoint-notices.js';
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

interface ClaimedLane {
  readonly endpoint: EndpointRow;
  /** The endpoint's updated_at as claimed, exactly (text): a person's change since moves it. */
  readonly endpointVersion: string;
  readonly lane: number;
  readonly delivery: ClaimedDelivery;
}

interface ClaimedDelivery {
  readonly id: string;
  readonly message_id: string;
  readonly payload: string;
  readonly retry_step: number;
}

/**
 * An attempt this instance could not make: no request went out, because it cannot sign the
 * message (no master key here, or not the one the endpoint's secret is sealed under). It is
 * no failure of the receiver (decision 506).
 */
interface NotSent {
  readonly notSent: string;
}

/**
 * What a claim came to. A lane can be 'emptied' between the statement that finds it (its
 * snapshot) and its lock: its previous attempt delivered the last due message meanwhile.
 */
type ClaimOutcome = 'started' | 'nothing due' | 'lane emptied';

/** Emptied lanes a fill goes past before it waits for the next wake or poll. */
const MAX_EMPTY_LANES_PER_FILL = 3;

/**
 * SQL: the lock a failure's record takes, exclusive, before it writes the endpoint's state
 * row; a success that passes the row by takes it shared (record()). `id`: the parameter
 * holding the endpoint's id.
 */
const healthLock = (id: string): string =>
  `hashtextextended('webhook endpoint health' || chr(10) || ${id}::text, 0)`;

/** Who the audit log names for what the dispatcher does on its own. */
const SYSTEM_ACTOR = 'system';

export class WebhookDispatcher {
  private running = false;
  private inFlight = 0;
  private filling = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly attempts = new Set<Promise<void>>();
  /** When stopStarting() was first called (a drain began): stop()'s wait runs from it. */
  private stoppingSinceMs: number | undefined;
  /** The connections of the attempts under way, and whether stop() gave them up. */
  private readonly holding = new Map<DbClient, { abandoned: boolean }>();
  /** Attempts in flight on this instance, per endpoint: its share of the slots. */
  private readonly inFlightByEndpoint = new Map<string, number>();

  constructor(
    /** Its own pool: an attempt holds a connection for up to the attempt timeout. */
    private readonly db: DbPool,
    private readonly client: DeliveryClient,
    private readonly box: SecretBox | undefined,
    private readonly settings: DispatcherSettings,
    private readonly logger: Logger,
    private readonly counters?: DispatcherCounters,
    /** Mail to the organization's owners and admins: an endpoint failing, disabled (SMTP_URL). */
    private readonly notices?: EndpointNotices,
  ) {}

  start(): void {
    if (this.running || this.settings.concurrency === 0) return;
    // Nothing it could sign: it claims nothing, and the instances with the key send at once
    // what a claim here would have put off (decision 547).
    if (!this.box) {
      this.logger.warn(
        'CREDENTIALS_MASTER_KEY is not set: this instance delivers no webhooks (the instances that have it do)',
      );
      return;
    }
    this.running = true;
    this.wake();
  }

  /**
   * No attempt starts after this (the gateway began to drain): the poll stops, and a claim
   * under way is rolled back, its delivery left due for the next instance. The attempts under
   * way go on.
   */
  stopStarting(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.stoppingSinceMs ??= Date.now();
  }

  /**
   * Stops claiming and waits for the attempts under way: with `waitMs`, at most that long after
   * the first stopStarting(), then the ones left are given up: their connections are closed,
   * Postgres ends their transactions, and their deliveries stay due (a receiver that did
   * answer gets the message again from another instance, with the same webhook-id).
   */
  async stop(waitMs?: number): Promise<void> {
    this.stopStarting();
    const underWay = Promise.allSettled([...this.attempts]);
    if (waitMs === undefined) {
      await underWay;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const leftMs = Math.max(0, this.stoppingSinceMs! + waitMs - Date.now());
    await Promise.race([underWay, new Promise((resolve) => (timer = setTimeout(resolve, leftMs)))]);
    clearTimeout(timer);
    for (const [connection, state] of this.holding) {
      state.abandoned = true;
      connection.release(new Error('the gateway stops: the delivery is left to another instance'));
    }
    this.holding.clear();
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
    let emptyLanes = 0;
    while (this.running && this.inFlight < this.settings.concurrency) {
      let outcome: ClaimOutcome;
      try {
        outcome = await this.startOne();
      } catch (error) {
        this.logger.error({ err: error }, 'webhook dispatcher: claiming failed');
        return;
      }
      if (outcome === 'nothing due') return;
      // A lane whose due delivery another attempt had just delivered: look again, a few times.
      if (outcome === 'lane emptied') {
        emptyLanes += 1;
        if (emptyLanes >= MAX_EMPTY_LANES_PER_FILL) return;
      }
    }
  }

  /**
   * Claims a lane with a due delivery and starts its attempt. The claim's transaction stays
   * open (holding the lane) until the attempt is recorded.
   */
  private async startOne(): Promise<ClaimOutcome> {
    const connection = await this.db.connect();
    let claimed: ClaimedLane | Exclude<ClaimOutcome, 'started'>;
    try {
      await connection.query('BEGIN');
      claimed = await claim(
        connection,
        this.inFlightByEndpoint,
        this.endpointShare(),
        this.box?.keyIds() ?? [],
      );
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => undefined);
      connection.release();
      throw error;
    }
    // Claimed as the drain began: the delivery stays due for the next instance.
    if (typeof claimed === 'string' || !this.running) {
      await connection.query('ROLLBACK').catch(() => undefined);
      connection.release();
      return typeof claimed === 'string' ? claimed : 'nothing due';
    }
    const endpointId = claimed.endpoint.id;
    this.inFlight += 1;
    this.inFlightByEndpoint.set(endpointId, (this.inFlightByEndpoint.get(endpointId) ?? 0) + 1);
    const attempt = this.attempt(connection, claimed)
      .catch((error: unknown) => {
        this.logger.error({ err: error, endpointId }, 'webhook attempt failed to record');
      })
      .finally(() => {
        this.inFlight -= 1;
        const left = (this.inFlightByEndpoint.get(endpointId) ?? 1) - 1;
        if (left === 0) this.inFlightByEndpoint.delete(endpointId);
        else this.inFlightByEndpoint.set(endpointId, left);
        this.attempts.delete(attempt);
        this.wake(); // a slot is free: more may be due
      });
    this.attempts.add(attempt);
    return 'started';
  }

  /**
   * The most slots of this instance one endpoint may hold: all but one, so that another
   * endpoint's message due meanwhile never waits for an attempt to end (a slow endpoint's can
   * take WEBHOOK_TIMEOUT_MS).
   */
  private endpointShare(): number {
    return Math.max(1, this.settings.concurrency - 1);
  }

  private async attempt(connection: DbClient, claimed: ClaimedLane): Promise<void> {
    const { endpoint, endpointVersion, lane, delivery } = claimed;
    const state = { abandoned: false };
    this.holding.set(connection, state);
    let failed = true;
    try {
      const result = await this.send(endpoint, delivery);
      if (state.abandoned) return;
      let noticesQueued = 0;
      if ('notSent' in result) {
        await this.recordNotSent(connection, endpoint, lane, delivery, result);
      } else {
        noticesQueued = await this.record(
          connection,
          endpoint,
          endpointVersion,
          lane,
          delivery,
          result,
        );
      }
      await connection.query('COMMIT');
      failed = false;
      if (noticesQueued > 0) this.notices?.queued();
      this.counters?.webhookAttempts.inc({ outcome: outcomeLabel(result) });
    } catch (error) {
      // stop() closed the connection under the attempt: the delivery is another instance's.
      if (state.abandoned) return;
      throw error;
    } finally {
      this.holding.delete(connection);
      if (!state.abandoned) {
        if (failed) await connection.query('ROLLBACK').catch(() => undefined);
        // A connection whose transaction could not end is not given back to the pool.
        connection.release(failed);
      }
    }
  }

  private async send(
    endpoint: EndpointRow,
    delivery: ClaimedDelivery,
  ): Promise<AttemptResult | NotSent> {
    // start() starts no claim without a box: this is for the type checker.
    if (!this.box) {
      return { notSent: 'not sent: CREDENTIALS_MASTER_KEY is not set on this instance' };
    }
    const now = Date.now();
    let secrets: string[];
    try {
      secrets = signingSecrets(this.box, endpoint, now);
    } catch {
      return { notSent: 'not sent: the signing secret cannot be opened (master key)' };
    }
    const headers = webhookHeaders(delivery.message_id, delivery.payload, secrets, now);
    return this.client.post(endpoint.url, delivery.payload, headers);
  }

  /**
   * The attempt's row, the delivery's next state, the lane's turn and the endpoint's health, in
   * the claim's transaction and in one statement. The endpoint's state row is shared by its
   * lanes: each change to it is computed from the row as it is (no lost update), and its lock
   * is held from this statement to the commit. Returns how many disable notices it queued.
   */
  private async record(
    connection: DbClient,
    endpoint: EndpointRow,
    endpointVersion: string,
    lane: number,
    delivery: ClaimedDelivery,
    result: AttemptResult,
  ): Promise<number> {
    const attemptAndLane = `attempt AS (
        INSERT INTO webhook_attempts (delivery_id, status_code, latency_ms, response_snippet, error)
        VALUES ($1, $2, $3, $4, $5)),
      lane AS (
        UPDATE webhook_endpoint_lanes SET last_attempt_at = now()
         WHERE endpoint_id = $6 AND lane = $7)`;
    const attemptValues = [
      delivery.id,
      result.statusCode,
      result.latencyMs,
      result.snippet,
      result.error,
      endpoint.id,
      lane,
    ];
    const delivered =
      result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    if (delivered) {
      // The state row is written by every lane, and its lock is held until the commit (a WAL
      // flush): written on every success, it would make the lanes take turns. A success
      // writes it when it changes the endpoint's health, or when last_success_at is a second
      // old; a row that needs neither is passed without waiting for its lock. Lanes record
      // out of order: the latest success stays (an attempt that began earlier may commit later).
      await connection.query(
        `WITH ${attemptAndLane},
           delivery AS (
             UPDATE webhook_deliveries SET state = 'delivered', attempt_count = attempt_count + 1,
                    last_attempt_at = now(), delivered_at = now()
              WHERE id = $1)
         UPDATE webhook_endpoint_states SET failing_since = NULL,
                last_attempt_at = GREATEST(last_attempt_at, now()),
                last_success_at = GREATEST(last_success_at, now())
          WHERE endpoint_id = $6
            AND (failing_since IS NOT NULL OR last_success_at IS NULL
                 OR last_success_at < now() - interval '1 second'
                 OR NOT pg_try_advisory_xact_lock_shared(${healthLock('$6')}))`,
        attemptValues,
      );
      return 0;
    }
    // Before the state row: a success skips that row only while it holds this lock shared
    // (above), so a failure recorded at the same time is never committed after a success that
    // passed it by (failing_since would stay set with a success after it).
    await connection.query(`SELECT pg_advisory_xact_lock(${healthLock('$1')})`, [endpoint.id]);
    const delayMs = retryDelayMs(this.settings.retryScheduleS, delivery.retry_step);
    // The delay counts from the failure: clock_timestamp(), not now(), which is when this
    // attempt's transaction began, before the receiver was called (up to its time-out earlier).
    const { rows } = await connection.query<{ failing_since: Date }>(
      `WITH ${attemptAndLane},
         delivery AS (
           UPDATE webhook_deliveries SET
             state = CASE WHEN $8::bigint IS NULL THEN 'failed' ELSE 'pending' END,
             attempt_count = attempt_count + 1, retry_step = retry_step + 1,
             last_attempt_at = now(),
             next_attempt_at = CASE WHEN $8::bigint IS NULL THEN next_attempt_at
                                    ELSE clock_timestamp() + $8::bigint * interval '1 millisecond' END
            WHERE id = $1)
       UPDATE webhook_endpoint_states SET failing_since = COALESCE(failing_since, now()),
              last_attempt_at = GREATEST(last_attempt_at, now())
        WHERE endpoint_id = $6 RETURNING failing_since`,
      [...attemptValues, delayMs],
    );
    const failingSince = rows[0]?.failing_since;
    const gone = result.statusCode === 410;
    const failingTooLong =
      failingSince !== undefined &&
      Date.now() - failingSince.getTime() >= this.settings.disableAfterMs;
    if (gone || failingTooLong)
      return this.disable(connection, endpoint, endpointVersion, gone ? 'gone' : 'failing');
    // Failing for a day (and not yet disabled): its owners and admins are warned once per run.
    const failingLong =
      failingSince !== undefined && Date.now() - failingSince.getTime() >= FAILING_WARNING_AFTER_MS;
    if (!failingLong) return 0;
    return this.queueNotices(connection, endpoint, (notices) =>
      notices.queueFailingWarning(connection, endpoint),
    );
  }

  /**
   * An attempt this instance could not make, in the delivery log with why (a claim takes only
   * endpoints whose secrets are sealed under keys it has, so this is a value that does not
   * open: damaged, or sealed under another key of the same id); the delivery waits
   * the schedule's first step for an instance that can sign it (this one's operator may fix
   * its key meanwhile). Its retry step and the endpoint's health stay as they were: the
   * receiver was not called, so neither its schedule nor its 5 days run out on this.
   */
  private async recordNotSent(
    connection: DbClient,
    endpoint: EndpointRow,
    lane: number,
    delivery: ClaimedDelivery,
    result: NotSent,
  ): Promise<void> {
    const delayMs = retryDelayMs(this.settings.retryScheduleS, 0) ?? 0;
    await connection.query(
      `WITH attempt AS (
         INSERT INTO webhook_attempts (delivery_id, status_code, latency_ms, response_snippet, error)
         VALUES ($1, NULL, 0, '', $2)),
       lane AS (
         UPDATE webhook_endpoint_lanes SET last_attempt_at = now()
          WHERE endpoint_id = $3 AND lane = $4)
       UPDATE webhook_deliveries SET attempt_count = attempt_count + 1, last_attempt_at = now(),
              next_attempt_at = clock_timestamp() + $5::bigint * interval '1 millisecond'
        WHERE id = $1`,
      [delivery.id, result.notSent, endpoint.id, lane, delayMs],
    );
  }

  /**
   * Disables an endpoint on its own (410, or failing for days), says so in the audit log, and
   * queues the mail to its organization's owners and admins (with SMTP_URL), all in the
   * attempt's transaction. Only the attempt whose UPDATE disabled the row does the rest:
   * another lane failing at once finds it disabled (decision 525). Not an endpoint a person
   * changed since this attempt's claim (`endpointVersion`, its updated_at then): enabled again
   * or moved to another URL meanwhile, it is not judged by an answer to what it was (decision
   * 550). Returns the notices queued.
   */
  private async disable(
    connection: DbClient,
    endpoint: EndpointRow,
    endpointVersion: string,
    reason: AutomaticDisableReason,
  ): Promise<number> {
    const { rowCount } = await connection.query(
      `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, disabled_at = now(),
              updated_at = now()
        WHERE id = $1 AND status = 'enabled' AND updated_at = $3::timestamptz`,
      [endpoint.id, reason, endpointVersion],
    );
    if (rowCount === 0) return 0;
    await recordAudit(connection, {
      orgId: endpoint.org_id,
      userId: SYSTEM_ACTOR,
      action: 'webhook.disable',
      objectType: 'webhook',
      objectId: endpoint.id,
      details: { reason },
    });
    const notified = await this.queueNotices(connection, endpoint, (notices) =>
      notices.queue(connection, endpoint, reason),
    );
    this.logger.warn(
      { endpointId: endpoint.id, orgId: endpoint.org_id, reason, notified },
      'webhook endpoint disabled',
    );
    return notified;
  }

  /**
   * Notices to the endpoint's owners and admins, behind a savepoint: a notice that cannot be
   * queued (Postgres refusing it, a bug) is logged and left out, and the attempt (and the
   * disable) are still recorded. Returns how many were queued.
   */
  private async queueNotices(
    connection: DbClient,
    endpoint: EndpointRow,
    queue: (notices: EndpointNotices) => Promise<number>,
  ): Promise<number> {
    if (!this.notices) return 0;
    await connection.query('SAVEPOINT endpoint_notice');
    try {
      const queued = await queue(this.notices);
      await connection.query('RELEASE SAVEPOINT endpoint_notice');
      return queued;
    } catch (error) {
      await connection.query('ROLLBACK TO SAVEPOINT endpoint_notice');
      this.logger.error(
        { err: error, endpointId: endpoint.id, orgId: endpoint.org_id },
        'webhook endpoint notice could not be queued',
      );
      return 0;
    }
  }
}

/**
 * Locks one lane with a due delivery of an enabled endpoint and picks the lane's oldest due
 * delivery. Locked lanes are skipped: another attempt is using them. Turns: the endpoint with
 * the fewest attempts in flight here first, then the one attempted longest ago, then its lane
 * attempted longest ago; an endpoint holding `share` slots here waits, and one that is failing
 * gets one attempt at a time here (a receiver in trouble is not sent 8 at once).
 *
 * Only endpoints this instance can sign for: each secret that signs now (the current one, the
 * previous one in its grace, and the earlier ones, whatever their grace: their expiry is
 * JSON, which no claim should have to parse, and a rewrap reseals them all) sealed under one
 * of `keyIds` (decision 547). Another instance with the key sends the rest at once; claimed
 * here, they would wait a retry step.
 *
 * The endpoint's state row is also taken FOR KEY SHARE (SKIP LOCKED): lanes share it, but an
 * instance of the version before lanes, which locks it FOR UPDATE during its attempts (decision
 * 167), and this one never send to the same endpoint at once during a rolling deploy.
 */
async function claim(
  connection: DbClient,
  inFlight: ReadonlyMap<string, number>,
  share: number,
  keyIds: readonly string[],
): Promise<ClaimedLane | 'nothing due' | 'lane emptied'> {
  // The endpoints with a delivery due first (one index probe each, webhook_deliveries_due),
  // then their lanes alone: the planner, left to itself, read every due delivery (or probed
  // all 8 lanes of every endpoint) on each claim. OFFSET 0 keeps the lane's EXISTS a probe
  // per lane row rather than a join over the due deliveries.
  const { rows: lanes } = await connection.query<
    EndpointRow & { lane: number; endpoint_version: string }
  >(
    `WITH due AS MATERIALIZED (
       SELECT e.id FROM webhook_endpoints e
        WHERE e.status = 'enabled'
          AND split_part(e.secret_sealed, ':', 1) = ANY ($4::text[])
          AND (e.previous_secret_sealed IS NULL OR e.previous_secret_expires_at IS NULL
               OR e.previous_secret_expires_at <= now()
               OR split_part(e.previous_secret_sealed, ':', 1) = ANY ($4::text[]))
          AND NOT EXISTS (
                SELECT 1 FROM jsonb_array_elements(e.earlier_secrets) retired
                 WHERE split_part(retired->>'sealed', ':', 1) <> ALL ($4::text[]))
          AND EXISTS (SELECT 1 FROM webhook_deliveries d
                       WHERE d.endpoint_id = e.id AND d.state = 'pending'
                         AND d.next_attempt_at <= now()))
     SELECT l.lane, e.updated_at::text AS endpoint_version, ${ENDPOINT_COLUMNS}
       FROM webhook_endpoint_lanes l
       JOIN webhook_endpoints e ON e.id = l.endpoint_id
       JOIN webhook_endpoint_states s ON s.endpoint_id = l.endpoint_id
       LEFT JOIN unnest($1::text[], $2::int[]) AS busy (endpoint_id, attempts)
         ON busy.endpoint_id = l.endpoint_id
      WHERE l.endpoint_id = ANY (ARRAY(SELECT id FROM due))
        AND e.status = 'enabled'
        AND COALESCE(busy.attempts, 0) < CASE WHEN s.failing_since IS NULL THEN $3 ELSE 1 END
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
                     WHERE d.endpoint_id = l.endpoint_id AND d.lane = l.lane
                       AND d.state = 'pending' AND d.next_attempt_at <= now() OFFSET 0)
      ORDER BY COALESCE(busy.attempts, 0), s.last_attempt_at NULLS FIRST,
               l.last_attempt_at NULLS FIRST
      LIMIT 1
      FOR UPDATE OF l SKIP LOCKED
      FOR KEY SHARE OF s SKIP LOCKED`,
    [[...inFlight.keys()], [...inFlight.values()], share, keyIds],
  );
  const claimed = lanes[0];
  if (!claimed) return 'nothing due';
  const { lane, endpoint_version: endpointVersion, ...endpoint } = claimed;
  // A statement of its own, so its snapshot is taken after the lane's lock: it sees the
  // lane's previous attempt committed.
  const { rows: deliveries } = await connection.query<ClaimedDelivery>(
    `SELECT d.id::text, d.message_id, m.payload, d.retry_step
       FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.endpoint_id = $1 AND d.lane = $2 AND d.state = 'pending'
        AND d.next_attempt_at <= now()
      ORDER BY d.message_seq
      LIMIT 1
      FOR UPDATE OF d`,
    [endpoint.id, lane],
  );
  const delivery = deliveries[0];
  return delivery ? { endpoint, endpointVersion, lane, delivery } : 'lane emptied';
}

function outcomeLabel(result: AttemptResult | NotSent): string {
  if ('notSent' in result) return 'not_sent';
  if (result.statusCode === null) return 'no_answer';
  if (result.statusCode >= 200 && result.statusCode < 300) return 'delivered';
  return 'refused';
}
