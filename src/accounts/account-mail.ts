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
import { EMAIL_TOKEN_TTL_MS, issueEmailToken, type EmailTokenPurpose } from './email-tokens.js';

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

  /** Issues a password-reset link (30 minutes) for the account and mails it. */
  sendPasswordReset(db: DbPool, account: MailedAccount): Promise<void> {
    return this.sendLink(db, account, 'password_reset');
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
