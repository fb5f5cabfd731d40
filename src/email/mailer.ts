// Outgoing e-mail (decision 370): gw sends a few short plain-text messages to dashboard users
// (an address to verify, a password-reset link, a notice that someone tried to sign up with
// their address), through the SMTP server SMTP_URL names, from EMAIL_FROM.
//
// A send never holds up or changes an HTTP answer: the routes answer the same whether or not
// an address has an account, so a message goes out after the answer, and a failure is logged
// (never the message, its link or the SMTP password: the error's code and the SMTP status
// only) and counted in gw_emails_total{result="failed"}.
import { createTransport } from 'nodemailer';
import type { Logger } from '../log.js';

/** What each message is for: a bounded label of the metric. */
export type MailPurpose = 'verify_email' | 'signup_notice' | 'password_reset';

export interface OutgoingMail {
  readonly purpose: MailPurpose;
  readonly to: string;
  readonly subject: string;
  /** Plain text; may hold a link with a secret: never logged. */
  readonly text: string;
}

export interface Mailer {
  /** Sends in the background: the answer of the request that asked for it does not wait. */
  send(mail: OutgoingMail): void;
  /** Waits (bounded) for the messages under way, then closes the connection. */
  close(): Promise<void>;
}

/** Counts what happened to each message (src/metrics.ts). */
export interface MailCounter {
  mailSent(purpose: MailPurpose, result: 'sent' | 'failed'): void;
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
/** How long shutdown waits for messages under way. */
const CLOSE_WAIT_MS = 5_000;

export class SmtpMailer implements Mailer {
  private readonly transport: ReturnType<typeof createTransport>;
  private readonly underWay = new Set<Promise<void>>();

  constructor(
    private readonly settings: SmtpSettings,
    private readonly logger: Logger,
    private readonly counter: MailCounter,
  ) {
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

  send(mail: OutgoingMail): void {
    const sending = this.deliver(mail).finally(() => this.underWay.delete(sending));
    this.underWay.add(sending);
  }

  /** Every message under way has been sent or has failed (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.underWay.size > 0) await Promise.allSettled([...this.underWay]);
  }

  async close(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.settled(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    this.transport.close();
  }

  private async deliver(mail: OutgoingMail): Promise<void> {
    try {
      await this.transport.sendMail({
        from: this.settings.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
      });
      this.counter.mailSent(mail.purpose, 'sent');
    } catch (error) {
      this.counter.mailSent(mail.purpose, 'failed');
      // The code (ECONNECTION, EAUTH, EENVELOPE…) and the server's status only: the message,
      // the command and the response text may repeat the recipient, the link or credentials.
      const { code, responseCode } = error as { code?: unknown; responseCode?: unknown };
      this.logger.warn(
        {
          purpose: mail.purpose,
          code: typeof code === 'string' ? code : undefined,
          responseCode: typeof responseCode === 'number' ? responseCode : undefined,
        },
        'an e-mail could not be sent',
      );
    }
  }
}
