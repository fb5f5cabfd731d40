// The messages gw sends to dashboard users (decision 370), built on PUBLIC_ORIGIN: never on
// the Host a request was sent with, which its sender chooses. A link's secret rides in the
// URL's fragment, as the invitation link's does: a browser sends no fragment to any server, so
// it stays out of access logs and Referer headers; the dashboard reads it and posts it.
import type { Mailer } from '../email/mailer.js';

export class AccountMail {
  constructor(
    private readonly mailer: Mailer,
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

  sendVerification(to: string, token: string): void {
    this.mailer.send({
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
    });
  }

  /** To the owner of an address someone tried to sign up with again. */
  sendSignupNotice(to: string): void {
    this.mailer.send({
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
    });
  }

  sendPasswordReset(to: string, token: string): void {
    this.mailer.send({
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
    });
  }
}
