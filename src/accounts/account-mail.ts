// The messages gw sends to dashboard users (decision 370), built on PUBLIC_ORIGIN: never on
// the Host a request was sent with, which its sender chooses. A link's secret rides in the
// URL's fragment, as the invitation link's does: a browser sends no fragment to any server, so
// it stays out of access logs and Referer headers; the dashboard reads it and posts it.
//
// Each message is queued in the e-mail outbox (decision 375) in the transaction that issues
// its link: the link exists exactly when a message carrying it will be sent, whatever happens
// to the SMTP server or this process after the answer.
import { withTransaction, type DbPool } from '../db/pool.js';
import type { OutgoingMail } from '../email/mailer.js';
import type { MailOutbox } from '../email/outbox.js';
import { sha256Hex } from '../ids.js';
import {
  EMAIL_TOKEN_TTL_MS,
  issueEmailToken,
  newEmailToken,
  type EmailTokenPurpose,
} from './email-tokens.js';

/**
 * A password-reset request in one statement (decision 413): $1 the address, $2 the token's
 * SHA-256, $3 its lifetime in ms, $4 the sealed message. It cleans up expired and used tokens
 * as issueEmailToken does, writes the token and the outbox row only where the address has an
 * account, and takes a transaction id whether or not it wrote (so the commit is logged and
 * flushed for an unknown address as for a known one).
 */
const RESET_IF_ACCOUNT = `
  WITH account AS (
    SELECT id, email FROM dashboard_users WHERE email = $1
  ), cleaned AS (
    DELETE FROM dashboard_email_tokens
     WHERE expires_at < now() OR (user_id = (SELECT id FROM account) AND used_at IS NOT NULL)
  ), token AS (
    INSERT INTO dashboard_email_tokens (token_hash, user_id, purpose, email, expires_at)
    SELECT $2, id, 'password_reset', email, now() + $3 * interval '1 millisecond' FROM account
    RETURNING token_hash
  ), queued AS (
    INSERT INTO email_outbox (purpose, sealed_message, token_hash, expires_at)
    SELECT 'password_reset', $4, token_hash, now() + $3 * interval '1 millisecond' FROM token
    RETURNING id
  )
  SELECT txid_current() AS xid, (SELECT count(*) FROM queued)::int AS queued`;

/** How long a sign-up notice (no link) may wait for the SMTP server before it is dropped. */
const NOTICE_TTL_MS = 24 * 3_600_000;

/** The account a link is mailed to: its address now. */
export interface MailedAccount {
  readonly userId: string;
  readonly email: string;
}

export class AccountMail {
  constructor(
    private readonly outbox: MailOutbox,
    /** PUBLIC_ORIGIN (required with SMTP_URL, src/config.ts). */
    private readonly origin: string,
  ) {}

  /** The dashboard link that verifies an address with `token`. */
  verificationLink(token: string): string {
    return `${this.origin}/dashboard/#email_verification_token=${token}`;
  }

  /** The dashboard link that resets a password with `token`. */
  passwordResetLink(token: string): string {
    return `${this.origin}/dashboard/#password_reset_token=${token}`;
  }

  /** Issues a verification link (24 hours) for the account's address and mails it. */
  sendVerification(db: DbPool, account: MailedAccount): Promise<void> {
    return this.sendLink(db, account, 'verify_email');
  }

  /**
   * Issues a password-reset link (30 minutes) for the account with `email` and mails it, if
   * there is such an account; else does nothing, and takes as long doing it (decision 413):
   * the token is drawn and the message sealed either way, and one statement, the same
   * either way, looks the account up, stores the token and queues the message (each insert
   * writing a row only for an account) and takes a transaction id, so both commit alike.
   */
  async sendPasswordResetTo(db: Pick<DbPool, 'query'>, email: string): Promise<void> {
    const token = newEmailToken('password_reset');
    await db.query(RESET_IF_ACCOUNT, [
      email,
      sha256Hex(token),
      EMAIL_TOKEN_TTL_MS.password_reset,
      this.outbox.seal(this.reset(email, token)),
    ]);
    // Woken either way: what it finds to send happens after the answer.
    this.outbox.queued();
  }

  /** To the owner of an address someone tried to sign up with again. */
  async sendSignupNotice(db: DbPool, to: string): Promise<void> {
    await this.outbox.queue(
      db,
      {
        purpose: 'signup_notice',
        to,
        subject: 'Someone tried to sign up to the gw dashboard with your address',
        text: [
          `Someone tried to sign up to the gw dashboard at ${this.origin} with this address,`,
          'which already has an account. Nothing was changed, and no new account was made.',
          '',
          `If it was you, sign in instead: ${this.origin}/dashboard/sign-in`,
          'If you forgot your password, choose "Forgot password?" on that page.',
          '',
          'If it was not you, you need not do anything.',
        ].join('\n'),
      },
      { expiresInMs: NOTICE_TTL_MS },
    );
    this.outbox.queued();
  }

  /** The token and the message carrying it, in one transaction; then the sender is woken. */
  private async sendLink(
    db: DbPool,
    { userId, email }: MailedAccount,
    purpose: EmailTokenPurpose,
  ): Promise<void> {
    await withTransaction(db, async (client) => {
      const token = await issueEmailToken(client, userId, email, purpose);
      const mail =
        purpose === 'verify_email' ? this.verification(email, token) : this.reset(email, token);
      await this.outbox.queue(client, mail, {
        expiresInMs: EMAIL_TOKEN_TTL_MS[purpose],
        tokenHash: sha256Hex(token),
      });
    });
    this.outbox.queued();
  }

  private verification(to: string, token: string): OutgoingMail {
    return {
      purpose: 'verify_email',
      to,
      subject: 'Verify your e-mail address for the gw dashboard',
      text: [
        `Someone (we hope you) signed up to the gw dashboard at ${this.origin} with this address.`,
        '',
        'To confirm that the address is yours, open this link within 24 hours:',
        '',
        this.verificationLink(token),
        '',
        'If it was not you, ignore this message. Until the address is verified, the account can',
        'neither join an organization nor connect an app, and after 24 hours whoever owns this',
        'address may sign up with it.',
      ].join('\n'),
    };
  }

  private reset(to: string, token: string): OutgoingMail {
    return {
      purpose: 'password_reset',
      to,
      subject: 'Reset your gw dashboard password',
      text: [
        `Someone asked to reset the password of the gw dashboard account with this address at ${this.origin}.`,
        '',
        'To choose a new password, open this link within 30 minutes (it works once):',
        '',
        this.passwordResetLink(token),
        '',
        'Resetting the password signs the account out everywhere. If you did not ask for this,',
        'ignore this message: your password stays as it is.',
      ].join('\n'),
    };
  }
}
