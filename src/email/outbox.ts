// The e-mail outbox (decision 375): a message gw has accepted to send is a row of email_outbox
// (migration 064), written in the transaction that issues the link it carries, so it exists
// exactly when its link does; a sender on any instance (src/email/outbox-sender.ts) sends it.
// The message (recipient, subject, text with its secret link) is sealed with the credentials
// master key: nothing of it is readable in Postgres, a backup or a replica.
import { sealToText } from '../credentials/sealed-text.js';
import type { SecretBox } from '../credentials/secret-box.js';
import type { DbPool } from '../db/pool.js';
import type { OutgoingMail } from './mailer.js';

/**
 * Why a message goes to its reader, when it is their membership: the message is sent only if
 * they still hold one of `roles` in the organization when its turn comes (decision 567).
 */
export interface ReaderMembership {
  readonly orgId: string;
  readonly userId: string;
  /** Membership roles as the accounts name them (the outbox keeps them; accounts sends mail). */
  readonly roles: readonly string[];
}

export interface QueueOptions {
  /** Past this the message is dropped, never sent: its link's own lifetime. */
  readonly expiresInMs: number;
  /** The SHA-256 of the link's token: a message whose link was used or voided is dropped. */
  readonly tokenHash?: string;
  /** Mail to a member for their role: dropped if they no longer hold it when it is sent. */
  readonly reader?: ReaderMembership;
}

/** What is sealed: everything of the message but its purpose. */
export type SealedMail = Pick<OutgoingMail, 'to' | 'subject' | 'text'>;

export class MailOutbox {
  constructor(
    private readonly box: SecretBox,
    /** Tells this instance's sender that a message was committed (else it waits a poll). */
    private readonly wakeSender: () => void,
  ) {}

  /**
   * Writes `mail` to the outbox through `db`: a transaction's client, so that it is sent if
   * and only if that transaction commits. Call `queued()` once it has.
   */
  async queue(db: Pick<DbPool, 'query'>, mail: OutgoingMail, options: QueueOptions): Promise<void> {
    const { reader } = options;
    await db.query(
      `INSERT INTO email_outbox (purpose, sealed_message, token_hash, expires_at,
                                 reader_org_id, reader_user_id, reader_roles)
       VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', $5, $6, $7)`,
      [
        mail.purpose,
        this.seal(mail),
        options.tokenHash ?? null,
        options.expiresInMs,
        reader?.orgId ?? null,
        reader?.userId ?? null,
        reader ? [...reader.roles] : null,
      ],
    );
  }

  /**
   * `mail` as email_outbox.sealed_message holds it, for a statement that writes the row
   * itself (a password-reset request, decision 413).
   */
  seal(mail: OutgoingMail): string {
    const sealed: SealedMail = { to: mail.to, subject: mail.subject, text: mail.text };
    return sealToText(this.box, JSON.stringify(sealed));
  }

  /** The messages queued are committed: this instance sends them now. */
  queued(): void {
    this.wakeSender();
  }
}

/** Counting stops here: past it the outbox is long, and its exact length does not matter. */
const COUNT_CAP = 100_000;

/** Messages accepted and neither sent nor given up yet, over every instance. */
export async function emailOutboxPending(db: DbPool): Promise<number> {
  const { rows } = await db.query<{ pending: number }>(
    `SELECT count(*)::int AS pending FROM (SELECT 1 FROM email_outbox LIMIT ${COUNT_CAP}) queued`,
  );
  return rows[0]?.pending ?? 0;
}
