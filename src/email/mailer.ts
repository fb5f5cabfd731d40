// Outgoing e-mail (decision 370): gw sends a few short plain-text messages to dashboard users
// (an address to verify, a password-reset link, a notice that someone tried to sign up with
// their address, a notice that a webhook endpoint fails or was disabled), through the SMTP
// server SMTP_URL names, from EMAIL_FROM.
//
// This is the SMTP side only: one attempt at one message. What is to be sent waits in the
// outbox (src/email/outbox.ts, decision 375) until an attempt here succeeds or it is given up.
import { createTransport } from 'nodemailer';

/** What each message is for: a bounded label of the metric. */
export type MailPurpose =
  'verify_email' | 'signup_notice' | 'password_reset' | 'webhook_disabled' | 'webhook_failing';

export interface OutgoingMail {
  readonly purpose: MailPurpose;
  readonly to: string;
  readonly subject: string;
  /** Plain text; may hold a link with a secret: never logged, never stored in the clear. */
  readonly text: string;
}

/**
 * What an attempt came to. A failure carries the error's code and the server's status only:
 * its message, the command and the response text may repeat the recipient, the link or
 * credentials. `permanent`: the server refused this message itself (a 5xx to its recipient or
 * content): sending it again would be refused again. Anything else (the server unreachable,
 * slow, refusing the credentials, a 4xx) may pass later.
 */
export type DeliveryResult =
  | { readonly kind: 'sent' }
  | {
      readonly kind: 'failed';
      readonly permanent: boolean;
      readonly code: string | undefined;
      readonly responseCode: number | undefined;
    };

export interface MailTransport {
  deliver(mail: OutgoingMail): Promise<DeliveryResult>;
  close(): void;
}

export interface SmtpSettings {
  /** SMTP_URL: smtp:// or smtps://, credentials in it. */
  readonly url: string;
  /** EMAIL_FROM. */
  readonly from: string;
}

/** Bounds on a slow or silent SMTP server (nodemailer's defaults wait minutes). */
const CONNECTION_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;

/** nodemailer's codes for a message the server refused (its recipients; its content). */
const MESSAGE_REFUSED_CODES = new Set(['EENVELOPE', 'EMESSAGE']);

export class SmtpMailer implements MailTransport {
  private readonly transport: ReturnType<typeof createTransport>;

  constructor(private readonly settings: SmtpSettings) {
    this.transport = createTransport({
      url: settings.url,
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      greetingTimeout: CONNECTION_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
      // nodemailer's own logging stays off: its debug lines would carry the conversation.
      logger: false,
      debug: false,
    });
  }

  async deliver(mail: OutgoingMail): Promise<DeliveryResult> {
    try {
      await this.transport.sendMail({
        from: this.settings.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
      });
      return { kind: 'sent' };
    } catch (error) {
      const { code, responseCode } = error as { code?: unknown; responseCode?: unknown };
      const safeCode = typeof code === 'string' ? code : undefined;
      const status = typeof responseCode === 'number' ? responseCode : undefined;
      return {
        kind: 'failed',
        permanent:
          safeCode !== undefined &&
          MESSAGE_REFUSED_CODES.has(safeCode) &&
          status !== undefined &&
          status >= 500,
        code: safeCode,
        responseCode: status,
      };
    }
  }

  close(): void {
    this.transport.close();
  }
}
