// The e-mail outbox's sender, one per gateway instance (decision 375). A few workers each claim
// the message due first (FOR UPDATE SKIP LOCKED) and hold its row, in an open transaction,
// while they talk to the SMTP server: no other instance sends it meanwhile. Sent, refused for
// good, or past its link's lifetime: the row is deleted in that transaction. Not sent for a
// reason that may pass (the server unreachable, slow, a 4xx): tried again after a delay that
// doubles, until its link expires. An instance that dies mid-attempt loses its connection, and
// Postgres ends the transaction: the row is due again for the others (at least once). Mail
// addressed to a member for their role goes only to one who still holds it (decision 567).
import { openFromText } from '../credentials/sealed-text.js';
import { SecretBoxError, type SecretBox } from '../credentials/secret-box.js';
import type { DbClient, DbPool } from '../db/pool.js';
import { isJsonObject } from '../json-shapes.js';
import type { Logger } from '../log.js';
import type { DeliveryResult, MailPurpose, MailTransport } from './mailer.js';
import type { SealedMail } from './outbox.js';

/** What happened to a message: a bounded label of gw_emails_total. */
export type MailResult = 'sent' | 'failed' | 'retried' | 'expired' | 'dropped';

/** Counts what happened to each message (src/metrics.ts). */
export interface MailCounter {
  mailSent(purpose: MailPurpose, result: MailResult): void;
}

export interface OutboxSenderSettings {
  /** Messages this instance sends at once. */
  readonly concurrency: number;
  /** How often an idle sender looks for messages due (queued by another instance, retries). */
  readonly pollIntervalMs: number;
  /** How long stop() waits for the attempts under way before leaving them to the others. */
  readonly stopWaitMs: number;
  /** The delay before a message's second attempt; it doubles after each failure, up to the cap. */
  readonly firstRetryDelayMs: number;
}

/** The first retry's delay gw runs with (src/composition/email.ts). */
export const FIRST_RETRY_DELAY_MS = 5_000;
const MAX_RETRY_DELAY_MS = 5 * 60_000;

/** The wait after the `attempts`-th failed attempt (1: the first). */
export function retryDelayMs(attempts: number, firstDelayMs = FIRST_RETRY_DELAY_MS): number {
  return Math.min(MAX_RETRY_DELAY_MS, firstDelayMs * 2 ** Math.min(attempts - 1, 20));
}

interface ClaimedMail {
  readonly id: string;
  readonly purpose: MailPurpose;
  readonly sealed_message: string;
  readonly attempts: number;
  /** Past its expiry, or its link used or voided: dropped, not sent. */
  readonly dead: boolean;
  /**
   * Mailed to a member for their role, and they no longer hold it there (removed, demoted,
   * their account or the organization deleted): dropped, not sent.
   */
  readonly unaddressed: boolean;
}

/**
 * The message due first whose row no other attempt holds. `dead`: its link no longer works
 * (expired, used, voided by a new password or a take-over): sending it would help nobody.
 * `unaddressed`: its reader was mailed as a member with a role they no longer hold.
 */
const CLAIM = `
  SELECT o.id::text, o.purpose, o.sealed_message, o.attempts,
         (o.expires_at <= now()
          OR (o.token_hash IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM dashboard_email_tokens t
                 WHERE t.token_hash = o.token_hash AND t.used_at IS NULL
                   AND t.expires_at > now()))) AS dead,
         (o.reader_org_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM org_memberships m
             WHERE m.org_id = o.reader_org_id AND m.user_id = o.reader_user_id
               AND m.role = ANY (o.reader_roles))) AS unaddressed
    FROM email_outbox o
   WHERE o.next_attempt_at <= now()
   ORDER BY o.next_attempt_at
   LIMIT 1
   FOR UPDATE OF o SKIP LOCKED`;

/** The opened message, if it is what MailOutbox sealed (else it would be retried for a day). */
function sealedMailOf(opened: unknown): SealedMail {
  const { to, subject, text } = (isJsonObject(opened) ? opened : {}) as Record<string, unknown>;
  if (typeof to !== 'string' || typeof subject !== 'string' || typeof text !== 'string') {
    throw new Error('not a sealed message');
  }
  return { to, subject, text };
}

export class OutboxSender {
  private running = false;
  private workers = 0;
  private wakeAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly underWay = new Set<Promise<void>>();
  /** When stopStarting() was first called (a drain began): stop()'s wait runs from it. */
  private stoppingSinceMs: number | undefined;
  /** The connections holding a claimed row, and whether stop() gave them up. */
  private readonly holding = new Map<DbClient, { abandoned: boolean }>();

  constructor(
    /** Its own pool: an attempt holds a connection for as long as the SMTP server takes. */
    private readonly db: DbPool,
    private readonly box: SecretBox,
    private readonly transport: MailTransport,
    private readonly settings: OutboxSenderSettings,
    private readonly logger: Logger,
    private readonly counter: MailCounter,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    // A poll starts one worker: an idle outbox costs one claim a second, not one per worker.
    this.timer = setInterval(() => this.wake(1), this.settings.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Looks for messages due now (one was just queued here), with up to `workers` workers. */
  wake(workers = this.settings.concurrency): void {
    if (!this.running) return;
    this.wakeAgain = true;
    while (this.workers < Math.min(workers, this.settings.concurrency)) {
      this.workers += 1;
      const worker = this.work()
        .catch((error: unknown) => {
          // Postgres unreachable, say: the next poll tries again. Never a message's content.
          this.logger.warn({ err: error }, 'e-mail outbox: claiming failed');
        })
        .finally(() => {
          this.workers -= 1;
          this.underWay.delete(worker);
        });
      this.underWay.add(worker);
    }
  }

  /**
   * No message is claimed after this (the gateway began to drain): what is due stays in the
   * outbox for the next instance. The attempts under way go on; stop()'s wait (`stopWaitMs`)
   * runs from here.
   */
  stopStarting(): void {
    this.running = false;
    clearInterval(this.timer);
    this.stoppingSinceMs ??= Date.now();
  }

  /**
   * Stops claiming; waits (bounded) for the attempts under way, then gives up those still
   * talking to the SMTP server: their connections are closed, Postgres ends their
   * transactions, and their rows wait for another instance.
   */
  async stop(): Promise<void> {
    this.stopStarting();
    let timer: NodeJS.Timeout | undefined;
    const leftMs = Math.max(0, this.stoppingSinceMs! + this.settings.stopWaitMs - Date.now());
    await Promise.race([
      Promise.allSettled([...this.underWay]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, leftMs);
      }),
    ]);
    clearTimeout(timer);
    for (const [connection, state] of this.holding) {
      state.abandoned = true;
      connection.release(new Error('the gateway stops: the message is left to another instance'));
    }
    this.holding.clear();
    this.transport.close();
  }

  /** Sends messages due until none is (or the sender stops). */
  private async work(): Promise<void> {
    while (this.running) {
      this.wakeAgain = false;
      const sent = await this.sendOne();
      // One was due: more may be, for every worker.
      if (sent) this.wake();
      // Nothing due: done, unless a message was queued since this claim looked.
      else if (!this.wakeAgain) return;
    }
  }

  /** Claims the message due first and attempts it; false when none was due. */
  private async sendOne(): Promise<boolean> {
    const connection = await this.db.connect();
    const state = { abandoned: false };
    let ended = false;
    try {
      await connection.query('BEGIN');
      const { rows } = await connection.query<ClaimedMail>(CLAIM);
      const claimed = rows[0];
      if (!claimed || !this.running) return false;
      this.holding.set(connection, state);
      const result = await this.attempt(connection, claimed);
      if (state.abandoned) return false;
      await connection.query('COMMIT');
      ended = true;
      this.counter.mailSent(claimed.purpose, result);
      return true;
    } catch (error) {
      // stop() closed the connection under the attempt: the row is another instance's now.
      if (state.abandoned) return false;
      throw error;
    } finally {
      this.holding.delete(connection);
      if (!state.abandoned) {
        const rolledBack =
          ended ||
          (await connection.query('ROLLBACK').then(
            () => true,
            () => false,
          ));
        // A connection whose transaction could not end is not given back to the pool.
        connection.release(!rolledBack);
      }
    }
  }

  /** Sends (or drops) the claimed message and writes what came of it, in the claim's transaction. */
  private async attempt(connection: DbClient, claimed: ClaimedMail): Promise<MailResult> {
    const { purpose, attempts } = claimed;
    const remove = () => connection.query('DELETE FROM email_outbox WHERE id = $1', [claimed.id]);
    if (claimed.dead) {
      await remove();
      this.logger.warn({ purpose, attempts }, 'an e-mail was given up: its link no longer works');
      return 'expired';
    }
    if (claimed.unaddressed) {
      await remove();
      this.logger.info(
        { purpose, attempts },
        'an e-mail was not sent: its reader no longer holds the role it was addressed to',
      );
      return 'dropped';
    }
    let mail: SealedMail;
    try {
      mail = sealedMailOf(JSON.parse(openFromText(this.box, claimed.sealed_message)));
    } catch (error) {
      // Sealed under a master key this instance does not have (a rotation that dropped the
      // previous key too soon): no instance with this configuration can send it.
      await remove();
      // SecretBoxError's reason names a key id at most; anything else (the opened text not
      // being the JSON gw wrote) could quote the text itself.
      const reason =
        error instanceof SecretBoxError
          ? error.message
          : 'the opened text is not a message gw sealed';
      this.logger.error({ purpose, reason }, 'an e-mail could not be sent: it cannot be opened');
      return 'failed';
    }
    const result = await this.transport.deliver({ purpose, ...mail });
    if (result.kind === 'sent') {
      await remove();
      return 'sent';
    }
    if (result.permanent) {
      await remove();
      this.logFailure(purpose, attempts + 1, result, undefined);
      return 'failed';
    }
    const delayMs = retryDelayMs(attempts + 1, this.settings.firstRetryDelayMs);
    // From the failure (clock_timestamp), not the claim (now); never past the link's expiry,
    // where the row is dropped.
    await connection.query(
      `UPDATE email_outbox SET attempts = attempts + 1,
              next_attempt_at = LEAST(expires_at,
                                      clock_timestamp() + $2 * interval '1 millisecond')
        WHERE id = $1`,
      [claimed.id, delayMs],
    );
    this.logFailure(purpose, attempts + 1, result, delayMs);
    return 'retried';
  }

  /** The code and the server's status only: never the recipient, the text or SMTP_URL. */
  private logFailure(
    purpose: MailPurpose,
    attempts: number,
    result: Extract<DeliveryResult, { kind: 'failed' }>,
    retryInMs: number | undefined,
  ): void {
    this.logger.warn(
      {
        purpose,
        code: result.code,
        responseCode: result.responseCode,
        attempts,
        ...(retryInMs === undefined ? { retry: false } : { retry: true, retryInMs }),
      },
      retryInMs === undefined
        ? 'an e-mail could not be sent: the server refused it'
        : 'an e-mail could not be sent yet: it is tried again',
    );
  }
}
