// Mail gw accepted is not lost (decision 375): each message waits in the e-mail outbox of
// Postgres, sealed, from the transaction that issues its link until a sender on some gateway
// has handed it to the SMTP server. Against the real Postgres and Redis and a real SMTP
// server (smtp-server, test/support/mail-catcher.ts) that is down, hangs or comes up late:
// the request answers as before, the message arrives once the server is up (also after its
// gateway was killed or stopped), each message goes once however many gateways send, and one
// whose link no longer works is dropped, never sent.
import { afterEach, describe, expect, it } from 'vitest';
import { sealToText } from '../src/credentials/sealed-text.js';
import { parseMasterKeys } from '../src/credentials/secret-box.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import {
  linkToken,
  mailCatcherUrl,
  SMTP_PASSWORD,
  startMailCatcher,
  startSilentSmtp,
  type MailCatcher,
} from './support/mail-catcher.js';
import {
  metricsUrl,
  runCli,
  startGateway,
  startGatewayProcess,
  type GatewayProcess,
} from './support/processes.js';
import { eventually, freePort } from './support/services.js';

// A database of its own: the senders of other files' gateways must not send these messages.
const { env, db } = isolatedContext('email-outbox', { ownDatabase: true });
const PUBLIC_ORIGIN = 'https://gw.example.test';
const FROM = 'gw dashboard <no-reply@gw.example.test>';
/**
 * The in-process gateways' sender waits less than gw's own 5 s before a first retry (and 5 s for
 * an attempt under way at a stop), so the tests do not wait those out: the same doubling and the
 * same give-up, sooner.
 */
const SENDER_TIMING = { firstRetryDelayMs: 500, stopWaitMs: 500 };
/** Generous: a failed attempt is tried again 0.5 s later, then 1 s, 2 s… (5 s, 10 s… in a process) */
const ARRIVAL_TIMEOUT_MS = 60_000;

/** Each test's gateways and servers, stopped after it: every sender sends from one outbox. */
const running: GatewayProcess[] = [];
const catchers: MailCatcher[] = [];
/** A test waits for a message through a retry or two, on a loaded machine. */
const TEST_TIMEOUT_MS = 180_000;

afterEach(async () => {
  await Promise.all(running.splice(0).map((gateway) => gateway.stop()));
  await Promise.all(catchers.splice(0).map((catcher) => catcher.close()));
});

/** A gateway (in this process) that sends its e-mail to the SMTP server on `smtpPort`. */
async function mailingGateway(smtpPort: number): Promise<GatewayProcess> {
  const gateway = await startGateway(mailingEnv(smtpPort), { emailSenderTiming: SENDER_TIMING });
  running.push(gateway);
  return gateway;
}

const mailingEnv = (smtpPort: number): Record<string, string> => ({
  ...env,
  SMTP_URL: mailCatcherUrl(smtpPort),
  EMAIL_FROM: FROM,
  PUBLIC_ORIGIN,
});

/**
 * With the SMTP server on `smtpPort` up again, a new gateway sends the message to `email` left
 * in the outbox, and sends it once.
 */
async function nextGatewaySendsOnce(smtpPort: number, email: string): Promise<void> {
  const mail = await catcherOn(smtpPort);
  await mailingGateway(smtpPort);
  await mail.nth(email, 1, ARRIVAL_TIMEOUT_MS);
  await eventually(outboxIsEmpty, ARRIVAL_TIMEOUT_MS);
  expect(mail.to(email)).toHaveLength(1);
}

async function catcherOn(port: number): Promise<MailCatcher> {
  const catcher = await startMailCatcher({ port });
  catchers.push(catcher);
  return catcher;
}

async function newUser(label: string): Promise<string> {
  const email = uniqueEmail(label).toLowerCase();
  const created = await runCli(
    ['admin', 'create-user', '--email', email, '--password-stdin'],
    env,
    { stdin: TEST_PASSWORD },
  );
  expect(created.code).toBe(0);
  return email;
}

async function requestReset(gateway: GatewayProcess, email: string): Promise<void> {
  const asked = await new DashboardClient(gateway.url, `https://127.0.0.1:${gateway.port}`).post(
    '/auth/password-reset/request',
    { email },
    { csrf: false },
  );
  expect(asked.status).toBe(202);
  expect(asked.body).toEqual({ reset_requested: true });
}

interface OutboxRow {
  readonly id: string;
  readonly attempts: number;
  /** The whole row as Postgres would show it to anyone reading the table. */
  readonly text: string;
}

/** The outbox rows of the reset links of `email` (found through their token's hash). */
async function outboxRowsOf(email: string): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `SELECT o.id::text, o.attempts, row_to_json(o)::text AS text
       FROM email_outbox o
       JOIN dashboard_email_tokens t ON t.token_hash = o.token_hash
       JOIN dashboard_users u ON u.id = t.user_id
      WHERE u.email = $1`,
    [email],
  );
  return rows;
}

/** The row of `email`'s one message, once an attempt to send it has failed. */
const failedOnce = (email: string): Promise<OutboxRow> =>
  eventually(async () => {
    const rows = await outboxRowsOf(email);
    return rows.length === 1 && rows[0]!.attempts >= 1 ? rows[0] : undefined;
  }, ARRIVAL_TIMEOUT_MS);

async function outboxIsEmpty(): Promise<true | undefined> {
  const { rows } = await db.query<{ queued: number }>(
    'SELECT count(*)::int AS queued FROM email_outbox',
  );
  return rows[0]!.queued === 0 ? true : undefined;
}

/** gw_emails_total{purpose="password_reset",result} as `gateway` serves it. */
async function resetMails(gateway: GatewayProcess, result: string): Promise<number> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  const match = new RegExp(
    `^gw_emails_total\\{purpose="password_reset",result="${result}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return Number(match?.[1] ?? 0);
}

async function outboxPending(gateway: GatewayProcess): Promise<number> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  return Number(/^gw_email_outbox_pending (\d+)$/m.exec(text)?.[1] ?? NaN);
}

describe('the e-mail outbox', () => {
  it(
    'answers as before while the SMTP server is down, keeps the message sealed, and sends it once the server is up',
    async () => {
      const smtpPort = await freePort(); // nothing listens: connections are refused
      const gateway = await mailingGateway(smtpPort);
      const email = await newUser('Patient');
      await requestReset(gateway, email);

      const waiting = await failedOnce(email);
      await expect.poll(() => resetMails(gateway, 'retried')).toBeGreaterThanOrEqual(1);
      expect(await resetMails(gateway, 'sent')).toBe(0);
      expect(await outboxPending(gateway)).toBe(1);
      const retryLine = gateway
        .output()
        .split('\n')
        .find((line) => line.includes('an e-mail could not be sent yet'));
      expect(JSON.parse(retryLine!)).toMatchObject({ purpose: 'password_reset', retry: true });

      const mail = await catcherOn(smtpPort);
      const received = await mail.nth(email, 1, ARRIVAL_TIMEOUT_MS);
      expect(received.to).toEqual([email]);
      expect(received.subject).toBe('Reset your gw dashboard password');
      const { token, link } = linkToken(received.text, 'password_reset_token');
      expect(link).toBe(`${PUBLIC_ORIGIN}/dashboard/#password_reset_token=${token}`);

      // What waited in Postgres held neither the token (as text or as bytes), its link, nor the
      // recipient: only the sealed message.
      for (const secret of [
        token,
        Buffer.from(token).toString('hex'),
        Buffer.from(token).toString('base64'),
        'password_reset_token',
        email,
        Buffer.from(email).toString('hex'),
      ]) {
        expect(waiting.text).not.toContain(secret);
      }
      expect(waiting.text).toContain('"purpose":"password_reset"');

      // Sent: the row is gone, counted once, and the link works.
      await eventually(outboxIsEmpty);
      await expect.poll(() => resetMails(gateway, 'sent')).toBe(1);
      const reset = await new DashboardClient(
        gateway.url,
        `https://127.0.0.1:${gateway.port}`,
      ).post(
        '/auth/password-reset/confirm',
        { token, new_password: 'a brand new passphrase, long enough' },
        { csrf: false },
      );
      expect(reset.status).toBe(200);
      expect(mail.to(email)).toHaveLength(1);
      for (const secret of [token, email, SMTP_PASSWORD]) {
        expect(gateway.output()).not.toContain(secret);
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'sends the message of a gateway killed (SIGKILL) in the middle of sending it from the next gateway, once',
    async () => {
      const smtpPort = await freePort();
      const hanging = await startSilentSmtp(smtpPort);
      const doomed = await startGatewayProcess(mailingEnv(smtpPort));
      running.push(doomed);
      const email = await newUser('Orphaned');
      await requestReset(doomed, email);
      // Its sender holds the message's row while it waits for the server's greeting.
      await hanging.connected;
      await doomed.stop('SIGKILL');
      await hanging.close();

      await nextGatewaySendsOnce(smtpPort, email);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'leaves the message of a gateway stopped while the server hangs to the next gateway',
    async () => {
      const smtpPort = await freePort();
      const hanging = await startSilentSmtp(smtpPort);
      const stopping = await mailingGateway(smtpPort);
      const email = await newUser('Handed-over');
      await requestReset(stopping, email);
      await hanging.connected;
      // The stop waits a little for the attempt, then gives it up: the row is left, not lost.
      await stopping.stop();
      expect(await outboxRowsOf(email)).toHaveLength(1);
      await hanging.close();

      await nextGatewaySendsOnce(smtpPort, email);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'sends each message once when two gateways send from one outbox',
    async () => {
      const smtpPort = await freePort();
      const [first, second] = [await mailingGateway(smtpPort), await mailingGateway(smtpPort)];
      const sentBefore = (await resetMails(first, 'sent')) + (await resetMails(second, 'sent'));
      const emails = await Promise.all(
        Array.from({ length: 8 }, (_, index) => newUser(`Twice-${index}`)),
      );
      for (const [index, email] of emails.entries()) {
        await requestReset(index % 2 === 0 ? first : second, email);
      }
      // Queued while the server is down; then all due at once, for both senders.
      for (const email of emails) await failedOnce(email);
      const mail = await catcherOn(smtpPort);
      await db.query('UPDATE email_outbox SET next_attempt_at = now()');

      for (const email of emails) await mail.nth(email, 1, ARRIVAL_TIMEOUT_MS);
      await eventually(outboxIsEmpty, ARRIVAL_TIMEOUT_MS);
      for (const email of emails) expect(mail.to(email)).toHaveLength(1);
      const sentAfter = (await resetMails(first, 'sent')) + (await resetMails(second, 'sent'));
      expect(sentAfter - sentBefore).toBe(emails.length);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'drops a message past its expiry, or whose link was voided meanwhile, and never sends it',
    async () => {
      const smtpPort = await freePort();
      const gateway = await mailingGateway(smtpPort);
      const [expired, voided] = [await newUser('Too-late'), await newUser('Voided')];
      await requestReset(gateway, expired);
      await requestReset(gateway, voided);
      const expiredRow = await failedOnce(expired);
      await failedOnce(voided);
      const droppedBefore = await resetMails(gateway, 'expired');

      // One's time is up; the other's link is voided by a password set another way.
      await db.query(
        `UPDATE email_outbox SET expires_at = now() - interval '1 second' WHERE id = $1`,
        [expiredRow.id],
      );
      const set = await runCli(
        ['admin', 'set-password', '--email', voided, '--password-stdin'],
        env,
        {
          stdin: 'an operator-chosen passphrase',
        },
      );
      expect(set.code).toBe(0);
      const mail = await catcherOn(smtpPort);
      await db.query('UPDATE email_outbox SET next_attempt_at = now()');

      await eventually(outboxIsEmpty, ARRIVAL_TIMEOUT_MS);
      await expect.poll(() => resetMails(gateway, 'expired')).toBe(droppedBefore + 2);
      // Gone without an attempt: nothing was sent, and nothing is left to send.
      expect(mail.to(expired)).toEqual([]);
      expect(mail.to(voided)).toEqual([]);
      const line = gateway
        .output()
        .split('\n')
        .find((entry) => entry.includes('an e-mail was given up'));
      expect(JSON.parse(line!)).toMatchObject({ purpose: 'password_reset' });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'drops rows no key opens (a dropped master key, a damaged or huge value) or that open to no message without holding up the mail behind them, and logs none of their content',
    async () => {
      const box = parseMasterKeys(
        env.CREDENTIALS_MASTER_KEY,
        env.CREDENTIALS_MASTER_KEY_ID!,
        undefined,
      )!;
      const smtpPort = await freePort();
      const mail = await catcherOn(smtpPort);
      const gateway = await mailingGateway(smtpPort);
      const failedBefore = await resetMails(gateway, 'failed');
      // Due before any real message: a claim in due order meets them first.
      const poisoned = [
        'gone-k0:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:c2VjcmV0', // a key no longer kept
        `${env.CREDENTIALS_MASTER_KEY_ID}:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:c2VjcmV0`, // tampered
        `${env.CREDENTIALS_MASTER_KEY_ID}:::`, // damaged
        'x'.repeat(2_000_000), // huge
        // Opened, but not a message: it would fail at the SMTP server, and be retried a day.
        sealToText(box, 'null'),
        sealToText(box, JSON.stringify({ to: 7, subject: 'c2VjcmV0', text: 'c2VjcmV0' })),
      ];
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO email_outbox (purpose, sealed_message, expires_at, next_attempt_at)
         SELECT 'password_reset', sealed, now() + interval '1 day', now() - interval '1 hour'
           FROM unnest($1::text[]) AS sealed
         RETURNING id::text`,
        [poisoned],
      );
      const email = await newUser('Behind-poison');
      await requestReset(gateway, email);

      await eventually(
        () => Promise.resolve(mail.to(email).length === 1 ? true : undefined),
        ARRIVAL_TIMEOUT_MS,
      );
      await eventually(outboxIsEmpty, ARRIVAL_TIMEOUT_MS);
      const { rows: left } = await db.query(
        'SELECT 1 FROM email_outbox WHERE id = ANY($1::bigint[])',
        [rows.map((row) => row.id)],
      );
      expect(left).toEqual([]);
      await expect.poll(() => resetMails(gateway, 'failed')).toBe(failedBefore + poisoned.length);
      const lines = gateway
        .output()
        .split('\n')
        .filter((entry) => entry.includes('it cannot be opened'));
      expect(lines).toHaveLength(poisoned.length);
      for (const line of lines) {
        expect(JSON.parse(line)).toMatchObject({ purpose: 'password_reset' });
        expect(line).not.toContain('c2VjcmV0');
        expect(line).not.toContain('xxxx');
      }
    },
    TEST_TIMEOUT_MS,
  );
});
