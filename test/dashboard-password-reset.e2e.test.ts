// "Forgot password" by e-mail (decision 370), against a real SMTP server (smtp-server), the
// real Redis and Postgres: the request answers the same for known and unknown addresses, the
// mailed link sets a new password once, within 30 minutes, and ends every session; requests
// and link uses are throttled; a send failure is counted and logged without a secret; and a
// gateway without SMTP_URL offers none of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/ids.js';
import { isolatedContext } from './support/context.js';
import { DashboardClient, TEST_PASSWORD, uniqueEmail } from './support/dashboard.js';
import {
  linkToken,
  SMTP_PASSWORD,
  startMailCatcher,
  type MailCatcher,
} from './support/mail-catcher.js';
import { metricsUrl, runCli, startGateway, type GatewayProcess } from './support/processes.js';
import { deletePrefix, eventually } from './support/services.js';
import type { ErrorBody } from './support/http.js';

const { env, db, redis, prefix } = isolatedContext('password-reset', { ownDatabase: true });
const PUBLIC_ORIGIN = 'https://gw.example.test';
const FROM = 'gw dashboard <no-reply@gw.example.test>';
const NEW_PASSWORD = 'a brand new passphrase, long enough';
let mail: MailCatcher;
let gateway: GatewayProcess;
let noMail: GatewayProcess;

beforeAll(async () => {
  mail = await startMailCatcher();
  [gateway, noMail] = await Promise.all([
    // The test's requests come from 127.0.0.1, its proxy: X-Forwarded-For names the client.
    startGateway({
      ...env,
      SMTP_URL: mail.url,
      EMAIL_FROM: FROM,
      PUBLIC_ORIGIN,
      TRUSTED_PROXIES: '127.0.0.1, ::1',
    }),
    startGateway(env),
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), noMail?.stop()]);
  await mail?.close();
});

const browser = (on: GatewayProcess = gateway) =>
  new DashboardClient(on.url, `https://127.0.0.1:${on.port}`);

/** Forgets this file's e-mail counts, so a test starts with every allowance full. */
const resetThrottles = () => deletePrefix(redis, `${prefix}:email-attempts`);

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

/** `from`: the client the proxy forwards it for (else the test's own address, 127.0.0.1). */
const requestReset = (email: string, on: GatewayProcess = gateway, from?: string) =>
  browser(on).post<Record<string, unknown>>(
    '/auth/password-reset/request',
    { email },
    { csrf: false, ...(from !== undefined && { headers: { 'x-forwarded-for': from } }) },
  );

const confirmReset = (token: string, newPassword = NEW_PASSWORD) =>
  browser().post<Record<string, unknown>>(
    '/auth/password-reset/confirm',
    { token, new_password: newPassword },
    { csrf: false },
  );

/** Asks for a reset of `email` and reads the `count`-th mail it is sent: its link's token. */
async function resetLink(email: string, count = 1): Promise<{ link: string; token: string }> {
  expect((await requestReset(email)).status).toBe(202);
  const received = await mail.nth(email, count);
  return linkToken(received.text, 'password_reset_token');
}

describe('forgot password, where gw sends e-mail', () => {
  it('mails a link that sets a new password once, ending every session; the old password stops working', async () => {
    await resetThrottles();
    const email = await newUser('Forgetful');
    const first = browser();
    const second = browser();
    expect((await first.login(email, TEST_PASSWORD)).status).toBe(200);
    expect((await second.login(email, TEST_PASSWORD)).status).toBe(200);

    const asked = await requestReset(email);
    expect(asked.status).toBe(202);
    expect(asked.body).toEqual({ reset_requested: true });
    const received = await mail.nth(email, 1);
    expect(received.to).toEqual([email]);
    expect(received.from).toBe('no-reply@gw.example.test');
    expect(received.subject).toBe('Reset your gw dashboard password');
    expect(received.text).toContain('within 30 minutes');
    const { link, token } = linkToken(received.text, 'password_reset_token');
    // on PUBLIC_ORIGIN, never the Host the request named; the secret in the fragment
    expect(link).toBe(`${PUBLIC_ORIGIN}/dashboard/#password_reset_token=${token}`);
    expect(token).toMatch(/^gw_pwr_[0-9A-Za-z]{43}$/);
    // Postgres holds its SHA-256 only
    const stored = await db.query<{ token_hash: string; purpose: string }>(
      `SELECT t.token_hash, t.purpose FROM dashboard_email_tokens t
         JOIN dashboard_users u ON u.id = t.user_id WHERE u.email = $1`,
      [email],
    );
    expect(stored.rows).toEqual([{ token_hash: sha256Hex(token), purpose: 'password_reset' }]);

    // a new password the rules refuse: 400 naming it, and the link still works
    const short = await confirmReset(token, 'short');
    expect(short.status).toBe(400);
    expect((short.body as ErrorBody).error.message).toContain('new_password');

    const reset = await confirmReset(token);
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ password_reset: true, email, sessions_ended: 2 });
    for (const ended of [first, second]) {
      const answer = await ended.get<ErrorBody>('/auth/session');
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('gw_session_required');
    }
    const oldPassword = await browser().login(email, TEST_PASSWORD);
    expect(oldPassword.status).toBe(401);
    expect((await browser().login(email, NEW_PASSWORD)).status).toBe(200);

    // single use
    const again = await confirmReset(token, 'yet another passphrase, long');
    expect(again.status).toBe(400);
    expect((again.body as ErrorBody).error.code).toBe('gw_email_token_invalid');
    expect((await browser().login(email, NEW_PASSWORD)).status).toBe(200);

    const audit = await db.query<{ action: string; details: unknown }>(
      `SELECT a.action, a.details FROM dashboard_audit_log a
         JOIN dashboard_users u ON u.personal_org_id = a.org_id AND u.id = a.user_id
        WHERE u.email = $1`,
      [email],
    );
    expect(audit.rows).toEqual([{ action: 'user.password_reset', details: { via: 'email_link' } }]);
    // neither the token, its link nor the SMTP password is in the log
    expect(gateway.output()).not.toContain(token);
    expect(gateway.output()).not.toContain(SMTP_PASSWORD);
  });

  it('refuses an expired link and changes nothing', async () => {
    await resetThrottles();
    const email = await newUser('Late');
    const { token } = await resetLink(email);
    await db.query(
      `UPDATE dashboard_email_tokens SET expires_at = now() - interval '1 second'
        WHERE token_hash = $1`,
      [sha256Hex(token)],
    );
    const late = await confirmReset(token);
    expect(late.status).toBe(400);
    expect((late.body as ErrorBody).error.code).toBe('gw_email_token_invalid');
    expect((await browser().login(email, TEST_PASSWORD)).status).toBe(200);
    expect((await browser().login(email, NEW_PASSWORD)).status).toBe(401);
  });

  it('voids the other reset links of the account once one is used', async () => {
    await resetThrottles();
    const email = await newUser('Twice');
    const { token: older } = await resetLink(email, 1);
    const { token: newer } = await resetLink(email, 2);
    expect((await confirmReset(newer)).status).toBe(200);
    const stale = await confirmReset(older, 'the older link must not work');
    expect(stale.status).toBe(400);
    expect((stale.body as ErrorBody).error.code).toBe('gw_email_token_invalid');
  });

  it('voids a reset link once the password is changed another way', async () => {
    await resetThrottles();
    const email = await newUser('Changer');
    const { token } = await resetLink(email);
    const user = browser();
    expect((await user.login(email, TEST_PASSWORD)).status).toBe(200);
    const changed = await user.post('/auth/password', {
      current_password: TEST_PASSWORD,
      new_password: NEW_PASSWORD,
    });
    expect(changed.status).toBe(200);
    const stale = await confirmReset(token, 'the link must not undo the change');
    expect(stale.status).toBe(400);
    expect((stale.body as ErrorBody).error.code).toBe('gw_email_token_invalid');
    expect((await browser().login(email, NEW_PASSWORD)).status).toBe(200);
  });

  it('answers a known and an unknown address identically, and mails only the known one', async () => {
    await resetThrottles();
    const known = await newUser('Known');
    const unknown = uniqueEmail('nobody').toLowerCase();
    const unknownAnswer = await requestReset(unknown);
    const knownAnswer = await requestReset(known);
    const shape = (answer: Awaited<ReturnType<typeof requestReset>>) => ({
      status: answer.status,
      body: answer.body,
      headers: [...answer.headers.entries()].filter(
        ([name]) => name !== 'date' && name !== 'x-request-id',
      ),
    });
    expect(shape(unknownAnswer)).toEqual(shape(knownAnswer));
    expect(knownAnswer.status).toBe(202);
    await mail.nth(known, 1);
    // the known address's mail was sent after the unknown's request was answered
    expect(mail.to(unknown)).toEqual([]);
    const rows = await db.query('SELECT 1 FROM dashboard_users WHERE email = $1', [unknown]);
    expect(rows.rowCount).toBe(0);
  });

  it('runs the same statement for a known and an unknown address, waiting on the same tables', async () => {
    // Decision 413: a known address used to cost a lookup, a transaction, a token and an
    // outbox row before the answer, an unknown one the lookup alone (median 7.6 ms vs 3.6 ms).
    // Held back by a lock on the outbox, both requests wait, in the same statement; before,
    // the unknown address was answered at once while the known one waited.
    await resetThrottles();
    const known = await newUser('Locked-out');
    const unknown = uniqueEmail('locked-nobody').toLowerCase();
    const holder = await db.connect();
    type Answer = Awaited<ReturnType<typeof requestReset>>;
    let answered: Promise<[Answer, Answer]> | undefined;
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE email_outbox IN SHARE MODE');
      const unknownAnswered = { done: false };
      const unknownAnswer = requestReset(unknown).finally(() => (unknownAnswered.done = true));
      answered = Promise.all([requestReset(known), unknownAnswer]);
      const waiting = await eventually(async () => {
        // Not on the lock's connection: a transaction sees pg_stat_activity as it first read it.
        const { rows } = await db.query<{ query: string }>(
          `SELECT query FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE '%password_reset%'`,
        );
        // Answered while the known address's request waits: not the same work.
        if (unknownAnswered.done) return rows;
        return rows.length >= 2 ? rows : undefined;
      });
      expect(unknownAnswered.done).toBe(false);
      expect(waiting.length).toBe(2);
      expect(waiting[0]!.query).toBe(waiting[1]!.query);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const [knownAnswer, unknownAnswer] = await answered!;
    expect([knownAnswer.status, unknownAnswer.status]).toEqual([202, 202]);
    expect(knownAnswer.body).toEqual(unknownAnswer.body);
    const received = await mail.nth(known, 1);
    expect(linkToken(received.text, 'password_reset_token').token).toMatch(/^gw_pwr_/);
    expect(mail.to(unknown)).toEqual([]);
    const tokens = await db.query(
      `SELECT u.email FROM dashboard_email_tokens t JOIN dashboard_users u ON u.id = t.user_id
        WHERE u.email = ANY($1::text[])`,
      [[known, unknown]],
    );
    expect(tokens.rows).toEqual([{ email: known }]);
  });

  it('throttles requests per address asked for, known or not, and per client', async () => {
    await resetThrottles();
    const known = await newUser('Hammered');
    const unknown = uniqueEmail('hammered-nobody').toLowerCase();
    for (const email of [known, unknown]) {
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        expect((await requestReset(email)).status).toBe(202);
      }
      const refused = await requestReset(email);
      expect(refused.status).toBe(429);
      expect((refused.body as unknown as ErrorBody).error.code).toBe('gw_too_many_attempts');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // per client address: 20 requests in the window, whatever addresses they name
    await resetThrottles();
    const answers: number[] = [];
    for (let attempt = 1; attempt <= 21; attempt += 1) {
      answers.push((await requestReset(uniqueEmail(`spray${attempt}`))).status);
    }
    expect(answers.slice(0, 20).every((status) => status === 202)).toBe(true);
    expect(answers[20]).toBe(429);
  });

  it('still mails the owner asking from another client once one client used up its share, and bounds the mailbox', async () => {
    await resetThrottles();
    const email = await newUser('Targeted');
    const unknown = uniqueEmail('targeted-nobody').toLowerCase();
    const tokensOf = async (): Promise<number> => {
      const { rows } = await db.query<{ count: string }>(
        `SELECT count(*) FROM dashboard_email_tokens t JOIN dashboard_users u ON u.id = t.user_id
          WHERE u.email = $1 AND t.purpose = 'password_reset'`,
        [email],
      );
      return Number(rows[0]!.count);
    };
    // Someone else asks for the owner's address from one client, as often as it is let.
    for (const address of [email, unknown]) {
      const statuses: number[] = [];
      for (let attempt = 1; attempt <= 5; attempt += 1) {
        statuses.push((await requestReset(address, gateway, '203.0.113.7:51234')).status);
      }
      expect(statuses).toEqual([202, 202, 202, 429, 429]);
    }
    await mail.nth(email, 3);
    // The owner, from home: before, 429 for 15 minutes and no mail.
    expect((await requestReset(email, gateway, '198.51.100.20')).status).toBe(202);
    const received = await mail.nth(email, 4);
    expect(linkToken(received.text, 'password_reset_token').token).toMatch(/^gw_pwr_/);
    // Many clients together: 10 e-mails to the address in the window, then none, known or not.
    const statuses: Record<string, number[]> = { [email]: [], [unknown]: [] };
    for (let client = 1; client <= 4; client += 1) {
      for (const address of [email, unknown]) {
        for (let attempt = 1; attempt <= 3; attempt += 1) {
          const answer = await requestReset(address, gateway, `[2001:db8:${client}::1]:443`);
          statuses[address]!.push(answer.status);
        }
      }
    }
    // the owner's address had 4 let through: 6 more; the unknown one had 3: 7 more
    expect(statuses[email]).toEqual([...Array<number>(6).fill(202), ...Array<number>(6).fill(429)]);
    expect(statuses[unknown]).toEqual([
      ...Array<number>(7).fill(202),
      ...Array<number>(5).fill(429),
    ]);
    expect((await requestReset(email, gateway, '198.51.100.21')).status).toBe(429);
    expect(await tokensOf()).toBe(10);
    await mail.nth(email, 10);
    expect(mail.to(unknown)).toEqual([]);
  });

  it('throttles uses of reset links per client, before the token is looked up', async () => {
    await resetThrottles();
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 21; attempt += 1) {
      statuses.push((await confirmReset(`gw_pwr_guess${attempt}`)).status);
    }
    expect(statuses.slice(0, 20).every((status) => status === 400)).toBe(true);
    expect(statuses[20]).toBe(429);
    // a real link waits out the window too: nothing is looked up past the limit
    await deletePrefix(redis, `${prefix}:email-attempts:recipient`);
    const email = await newUser('Patient');
    const { token } = await resetLink(email);
    const refused = await confirmReset(token);
    expect(refused.status).toBe(429);
    await resetThrottles();
    expect((await confirmReset(token)).status).toBe(200);
  });

  it('answers the same when the mail cannot be sent, and counts and logs the failure without a secret', async () => {
    await resetThrottles();
    const email = await newUser('Unreachable');
    const failuresBefore = await failedResetMails();
    mail.refuse = true;
    try {
      const asked = await requestReset(email);
      expect(asked.status).toBe(202);
      expect(asked.body).toEqual({ reset_requested: true });
      await expect.poll(failedResetMails, { timeout: 10_000 }).toBe(failuresBefore + 1);
    } finally {
      mail.refuse = false;
    }
    const line = gateway
      .output()
      .split('\n')
      .find((entry) => entry.includes('an e-mail could not be sent'));
    expect(JSON.parse(line!)).toMatchObject({
      purpose: 'password_reset',
      responseCode: 550,
      retry: false,
    });
    // Refused for good (550: no such mailbox): given up at once, not left to be tried again.
    const queued = await db.query(
      `SELECT 1 FROM email_outbox o JOIN dashboard_email_tokens t ON t.token_hash = o.token_hash
         JOIN dashboard_users u ON u.id = t.user_id WHERE u.email = $1`,
      [email],
    );
    expect(queued.rows).toEqual([]);
    const { rows } = await db.query<{ token_hash: string }>(
      `SELECT t.token_hash FROM dashboard_email_tokens t
         JOIN dashboard_users u ON u.id = t.user_id WHERE u.email = $1`,
      [email],
    );
    expect(rows).toHaveLength(1);
    expect(gateway.output()).not.toContain(email);
    expect(gateway.output()).not.toContain(SMTP_PASSWORD);
  });
});

async function failedResetMails(): Promise<number> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  const match = /^gw_emails_total\{purpose="password_reset",result="failed"\} (\d+)$/m.exec(text);
  return Number(match?.[1] ?? 0);
}

describe('the review a reset asks for, in every browser (decision 513)', () => {
  const REVIEWED = '/dashboard/api/user/made-recently/reviewed';
  type Review = { password_reset_at: string } | null;
  const reviewOf = async (client: DashboardClient): Promise<Review> =>
    (await client.get<{ review_after_reset: Review }>('/auth/session')).body.review_after_reset;
  const markOf = async (email: string): Promise<Date | null> =>
    (
      await db.query<{ review_after_reset_at: Date | null }>(
        'SELECT review_after_reset_at FROM dashboard_users WHERE email = $1',
        [email],
      )
    ).rows[0]!.review_after_reset_at;

  it('is asked of every sign-in after a reset by link until marked done, and asked again by a newer reset', async () => {
    await resetThrottles();
    const email = await newUser('Reviewer');
    const bystanderEmail = await newUser('Bystander');
    const bystander = browser();
    expect((await bystander.login(bystanderEmail, TEST_PASSWORD)).status).toBe(200);
    expect(await reviewOf(bystander)).toBeNull();

    expect((await confirmReset((await resetLink(email)).token)).status).toBe(200);
    const { rows } = await db.query<{ created_at: Date }>(
      `SELECT e.created_at FROM dashboard_audit_log e JOIN dashboard_users u ON u.id = e.user_id
        WHERE u.email = $1 AND e.action = 'user.password_reset'`,
      [email],
    );
    const resetAt = rows[0]!.created_at.toISOString();
    // two browsers, neither the one that reset: both are asked, in the sign-in's answer too
    const laptop = browser();
    const phone = browser();
    const signedIn = await laptop.login(email, NEW_PASSWORD);
    expect(signedIn.body.review_after_reset).toEqual({ password_reset_at: resetAt });
    expect((await phone.login(email, NEW_PASSWORD)).status).toBe(200);
    expect(await reviewOf(phone)).toEqual({ password_reset_at: resetAt });

    // another user marking "their" review done with this reset's time changes nothing here
    const notTheirs = await bystander.post<{ review_after_reset: Review }>(REVIEWED, {
      password_reset_at: resetAt,
    });
    expect(notTheirs.status).toBe(200);
    expect(notTheirs.body).toEqual({ review_after_reset: null });
    expect(await reviewOf(phone)).toEqual({ password_reset_at: resetAt });

    // done for an earlier reset than the one asked: still asked
    const earlier = await laptop.post<{ review_after_reset: Review }>(REVIEWED, {
      password_reset_at: new Date(Date.parse(resetAt) - 1).toISOString(),
    });
    expect(earlier.body).toEqual({ review_after_reset: { password_reset_at: resetAt } });

    // done on the laptop (the time to the millisecond, as the answer gave it): the phone is
    // no longer asked, nor is a new sign-in
    const done = await laptop.post<{ review_after_reset: Review }>(REVIEWED, {
      password_reset_at: resetAt,
    });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ review_after_reset: null });
    expect(await markOf(email)).toBeNull();
    expect(await reviewOf(phone)).toBeNull();
    expect((await browser().login(email, NEW_PASSWORD)).body.review_after_reset).toBeNull();

    // a newer reset asks again; marking the older one done leaves it asked
    expect(
      (await confirmReset((await resetLink(email, 2)).token, 'yet another passphrase, long'))
        .status,
    ).toBe(200);
    const again = browser();
    const second = await again.login(email, 'yet another passphrase, long');
    const newer = (second.body.review_after_reset as { password_reset_at: string })
      .password_reset_at;
    expect(Date.parse(newer)).toBeGreaterThan(Date.parse(resetAt));
    const stale = await again.post<{ review_after_reset: Review }>(REVIEWED, {
      password_reset_at: resetAt,
    });
    expect(stale.body).toEqual({ review_after_reset: { password_reset_at: newer } });
    expect(await markOf(email)).not.toBeNull();
  });

  it('refuses what it does not take, and answers only a signed-in user with the CSRF token', async () => {
    await resetThrottles();
    const email = await newUser('Refused');
    expect((await confirmReset((await resetLink(email)).token)).status).toBe(200);
    const client = browser();
    expect((await client.login(email, NEW_PASSWORD)).status).toBe(200);
    const asked = await reviewOf(client);
    expect(asked).not.toBeNull();
    for (const body of [
      {},
      { password_reset_at: 'yesterday' },
      { password_reset_at: 1_700_000_000_000 },
      { password_reset_at: asked!.password_reset_at, extra: true },
    ]) {
      const refused = await client.post<ErrorBody>(REVIEWED, body);
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('gw_invalid_request');
    }
    const noCsrf = await client.post<ErrorBody>(REVIEWED, asked!, { csrf: false });
    expect(noCsrf.status).toBe(403);
    const signedOut = await browser().post<ErrorBody>(REVIEWED, asked!, { csrf: false });
    expect(signedOut.status).toBe(401);
    expect(signedOut.body.error.code).toBe('gw_session_required');
    // nothing was marked done
    expect(await reviewOf(client)).toEqual(asked);
    expect(await markOf(email)).not.toBeNull();
  });
});

describe('without SMTP_URL', () => {
  it('offers no reset: 403 gw_email_disabled, and the page says nothing of e-mail', async () => {
    const email = await newUser('NoMail');
    const asked = await requestReset(email, noMail);
    expect(asked.status).toBe(403);
    expect((asked.body as unknown as ErrorBody).error.code).toBe('gw_email_disabled');
    const confirm = await browser(noMail).post<ErrorBody>(
      '/auth/password-reset/confirm',
      { token: 'gw_pwr_x', new_password: NEW_PASSWORD },
      { csrf: false },
    );
    expect(confirm.status).toBe(403);
    expect(confirm.body.error.code).toBe('gw_email_disabled');
    const page = await (await fetch(`${noMail.url}/dashboard/sign-in`)).text();
    expect(page).not.toContain('gw-email');
    const withMail = await (await fetch(`${gateway.url}/dashboard/sign-in`)).text();
    expect(withMail).toContain('<meta name="gw-email" content="on" />');
  });
});
