// Start-up, gw's outgoing e-mail (SMTP_URL; decisions 370, 375): the outbox the routes queue
// messages in, and this instance's sender, on a Postgres pool of its own, closed by `closers`.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../credentials/secret-box.js';
import { createDbPool, IDLE_IN_TRANSACTION_MS } from '../db/pool.js';
import { SmtpMailer } from '../email/mailer.js';
import { MailOutbox } from '../email/outbox.js';
import {
  FIRST_RETRY_DELAY_MS,
  OutboxSender,
  type MailCounter,
  type OutboxSenderSettings,
} from '../email/outbox-sender.js';
import type { Logger } from '../log.js';
import { POOL_END_WAIT_MS } from './postgres.js';
import type { ShutdownState } from './shutdown-state.js';

/** Messages one instance sends at once: mail is rare (sign-ups, resets), SMTP slow at worst. */
const SEND_CONCURRENCY = 2;
/** How often an idle sender looks for messages queued elsewhere or due for a retry. */
const POLL_INTERVAL_MS = 1_000;
/** How long a stopping instance waits for its attempts under way. */
export const STOP_WAIT_MS = 5_000;
/**
 * An attempt's transaction is idle on the server while the SMTP server is talked to (bounded by
 * the mailer's connection, greeting and socket time-outs, 10, 10 and 30 s a step): ended by the
 * server's idle bound before it is recorded, the message would be due again and may go twice.
 */
const SEND_IDLE_IN_TRANSACTION_MS = 4 * 60_000 + IDLE_IN_TRANSACTION_MS;

/** How long the sender waits: a retry's first delay and a stop's wait for attempts under way. */
export type EmailSenderTiming = Pick<OutboxSenderSettings, 'firstRetryDelayMs' | 'stopWaitMs'>;

/**
 * The outbox, and its sender started; null where gw sends no e-mail. `timing`: the sender's
 * waits but those given (a test gives shorter ones rather than waiting them out).
 */
export function startEmail(
  config: Config,
  secretBox: SecretBox | undefined,
  counter: MailCounter,
  logger: Logger,
  closers: Closers,
  shutdown: Pick<ShutdownState, 'stopStarting'>,
  timing: Partial<EmailSenderTiming> = {},
): MailOutbox | null {
  if (config.SMTP_URL === undefined || config.EMAIL_FROM === undefined) return null;
  // src/config.ts refuses SMTP_URL without CREDENTIALS_MASTER_KEY: messages are sealed.
  if (!secretBox) throw new Error('SMTP_URL needs CREDENTIALS_MASTER_KEY');
  // Ended after the sender, waited for at most POOL_END_WAIT_MS like the other pools: a claim
  // that waits on a hung Postgres holds its client until the pool's read time-out (decision 463).
  const db = closers.add(
    'e-mail pool',
    createDbPool(config.DATABASE_URL, SEND_CONCURRENCY, config.DATABASE_TIMEOUT_MS, {
      idleInTransactionMs: SEND_IDLE_IN_TRANSACTION_MS,
      applicationName: 'gw-email',
    }),
    (pool) => pool.end(),
    POOL_END_WAIT_MS,
  );
  const sender = new OutboxSender(
    db,
    secretBox,
    new SmtpMailer({ url: config.SMTP_URL, from: config.EMAIL_FROM }),
    {
      concurrency: SEND_CONCURRENCY,
      pollIntervalMs: POLL_INTERVAL_MS,
      stopWaitMs: timing.stopWaitMs ?? STOP_WAIT_MS,
      firstRetryDelayMs: timing.firstRetryDelayMs ?? FIRST_RETRY_DELAY_MS,
    },
    logger,
    counter,
  );
  // From the drain's start no message is claimed (what is due waits for the next instance);
  // the stop's wait for those under way runs from then.
  shutdown.stopStarting.push(() => sender.stopStarting());
  closers.add('e-mail sender', sender, (started) => started.stop());
  sender.start();
  return new MailOutbox(secretBox, () => sender.wake());
}
