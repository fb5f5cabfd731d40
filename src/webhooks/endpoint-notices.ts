// The mail an organization's owners and admins get about its webhook endpoints: when the
// dispatcher disables one on its own (a 410, or failing for WEBHOOK_DISABLE_AFTER_S; decision
// 525), and when one has failed for a day, before that (decision 527). Queued in the e-mail
// outbox (decision 375) in the transaction of the attempt that disables the endpoint or finds
// it failing that long: the endpoint's row is disabled once however many dispatchers fail on
// it at once (its UPDATE matches only an enabled row), and marked warned once per run of
// failures, so each notice is queued once, and exactly when that commits.
//
// Each notice goes to its reader only if they are still an owner or admin of the organization
// when it is sent (decision 567): a member removed, or made a member or viewer, between the
// queueing and the sending (an SMTP server down for hours, say) is not told about an
// organization they no longer administer.
//
// The endpoint is named by its description and its URL's host, never its whole URL: a path or
// a query may itself be a credential (a chat service's incoming-webhook URL, decision 436),
// and mail is forwarded, archived and read on phones. Nothing secret is in it.
import type { DbClient } from '../db/pool.js';
import type { OutgoingMail } from '../email/mailer.js';
import type { MailOutbox, QueueOptions } from '../email/outbox.js';
import type { EndpointRow } from './endpoints.js';

/** Why the dispatcher disabled an endpoint (its disabled_reason). */
export type AutomaticDisableReason = 'gone' | 'failing';

/** What the dispatcher needs to tell an organization about one of its endpoints. */
export interface EndpointNotices {
  /**
   * In the transaction that disabled `endpoint`: queues the notice to each recipient, unless
   * one went out for this endpoint within the hour. Returns how many were queued.
   */
  queue(client: DbClient, endpoint: EndpointRow, reason: AutomaticDisableReason): Promise<number>;
  /**
   * In the transaction of a failed attempt: if the endpoint (enabled) has failed with no
   * success for FAILING_WARNING_AFTER_MS and its owners and admins were not yet warned of this
   * run of failures, queues the warning to each. Returns how many were queued.
   */
  queueFailingWarning(client: DbClient, endpoint: EndpointRow): Promise<number>;
  /** The transaction that queued notices committed: this instance sends them now. */
  queued(): void;
}

export interface EndpointNoticeSettings {
  /** PUBLIC_ORIGIN: the dashboard's links are built on it. */
  readonly origin: string;
  /** WEBHOOK_DISABLE_AFTER_S, in ms: said in the notice of a failing endpoint. */
  readonly disableAfterMs: number;
  /** WEBHOOK_RETENTION_DAYS: how long the messages that wait are kept. */
  readonly retentionDays: number;
}

/**
 * How long a notice may wait for the SMTP server before it is dropped: longer than a sign-up
 * notice's day, as the endpoint stays disabled until someone acts, but not for ever.
 */
const NOTICE_TTL_MS = 3 * 86_400_000;

/** A disable within this long after the endpoint's last notice is not mailed (decision 526). */
const NOTICE_INTERVAL = '1 hour';

/** An endpoint failing with no success for this long is warned about (once per run). */
export const FAILING_WARNING_AFTER_MS = 86_400_000;

/** The longest description and organization name a notice quotes. */
const MAX_QUOTED_CHARS = 100;

/** Who is told: the roles that manage the organization's webhook endpoints. */
const NOTICE_ROLES = ['owner', 'admin'] as const;

interface Recipient {
  readonly user_id: string;
  readonly email: string;
  readonly role: 'owner' | 'admin';
  readonly org_name: string;
  readonly failing_since: Date | null;
  readonly last_success_at: Date | null;
  /** When it was disabled (a disable notice's only). */
  readonly disabled_at?: Date;
}

/**
 * Marks the endpoint notified (unless it was within the interval) and reads, in the same
 * statement, its organization's owners and admins whose address is verified, with what the
 * notice says. No row: nothing to send (notified within the hour, or nobody to tell).
 */
const NOTIFY = `
  WITH endpoint AS (
    UPDATE webhook_endpoints SET disable_notice_at = now()
     WHERE id = $1
       AND (disable_notice_at IS NULL OR disable_notice_at <= now() - interval '${NOTICE_INTERVAL}')
    RETURNING id, org_id, disabled_at
  )
  SELECT u.id AS user_id, u.email, m.role, o.name AS org_name, s.failing_since,
         s.last_success_at, e.disabled_at
    FROM endpoint e
    JOIN organizations o ON o.id = e.org_id
    LEFT JOIN webhook_endpoint_states s ON s.endpoint_id = e.id
    JOIN org_memberships m ON m.org_id = e.org_id AND m.role = ANY($2::text[])
    JOIN dashboard_users u ON u.id = m.user_id AND u.email_verified_at IS NOT NULL
   ORDER BY u.email`;

/**
 * The warning's counterpart of NOTIFY: marks the endpoint warned of its current run of
 * failures (failing_since, compared in Postgres to the microsecond) if it is enabled, has failed
 * that long and was not warned of this run; the recipients as NOTIFY reads them.
 */
const WARN = `
  WITH endpoint AS (
    UPDATE webhook_endpoints e SET failing_notice_for = s.failing_since
      FROM webhook_endpoint_states s
     WHERE e.id = $1 AND s.endpoint_id = e.id AND e.status = 'enabled'
       AND s.failing_since <= now() - $2 * interval '1 millisecond'
       AND e.failing_notice_for IS DISTINCT FROM s.failing_since
    RETURNING e.id, e.org_id, s.failing_since, s.last_success_at
  )
  SELECT u.id AS user_id, u.email, m.role, o.name AS org_name, e.failing_since,
         e.last_success_at
    FROM endpoint e
    JOIN organizations o ON o.id = e.org_id
    JOIN org_memberships m ON m.org_id = e.org_id AND m.role = ANY($3::text[])
    JOIN dashboard_users u ON u.id = m.user_id AND u.email_verified_at IS NOT NULL
   ORDER BY u.email`;

export class EndpointNoticeMail implements EndpointNotices {
  constructor(
    private readonly outbox: MailOutbox,
    private readonly settings: EndpointNoticeSettings,
  ) {}

  async queue(
    client: DbClient,
    endpoint: EndpointRow,
    reason: AutomaticDisableReason,
  ): Promise<number> {
    const { rows } = await client.query<Recipient>(NOTIFY, [endpoint.id, NOTICE_ROLES]);
    for (const recipient of rows) {
      await this.outbox.queue(
        client,
        this.notice(endpoint, reason, recipient),
        queueOptions(endpoint, recipient),
      );
    }
    return rows.length;
  }

  async queueFailingWarning(client: DbClient, endpoint: EndpointRow): Promise<number> {
    if (this.settings.disableAfterMs <= FAILING_WARNING_AFTER_MS) return 0;
    const { rows } = await client.query<Recipient>(WARN, [
      endpoint.id,
      FAILING_WARNING_AFTER_MS,
      NOTICE_ROLES,
    ]);
    for (const recipient of rows) {
      await this.outbox.queue(
        client,
        this.warning(endpoint, recipient),
        queueOptions(endpoint, recipient),
      );
    }
    return rows.length;
  }

  queued(): void {
    this.outbox.queued();
  }

  /** The dashboard page that lists the organization's endpoints (owners and admins). */
  webhooksPage(orgId: string): string {
    return `${this.settings.origin}/dashboard/orgs/${encodeURIComponent(orgId)}/webhooks`;
  }

  /** What both mails say of the endpoint and its reader: its name, where it sends, why them. */
  private about(
    endpoint: EndpointRow,
    recipient: Recipient,
  ): { orgName: string; opening: string; endpointLine: string; closing: string } {
    const orgName = quotable(recipient.org_name);
    const description = quotable(endpoint.description);
    const named =
      description === '' ? 'A webhook endpoint' : `The webhook endpoint "${description}"`;
    return {
      orgName,
      opening: `${named} of the organization "${orgName}" on the gw gateway at ${this.settings.origin}`,
      endpointLine: `Endpoint: ${endpoint.id}, sending to ${hostOf(endpoint.url)}`,
      closing: `You receive this as an ${recipient.role} of "${orgName}".`,
    };
  }

  private notice(
    endpoint: EndpointRow,
    reason: AutomaticDisableReason,
    recipient: Recipient,
  ): OutgoingMail {
    const { orgName, opening, endpointLine, closing } = this.about(endpoint, recipient);
    const failingSince = recipient.failing_since?.toISOString() ?? 'its last attempt';
    const lastSuccess = recipient.last_success_at?.toISOString() ?? 'never';
    const why =
      reason === 'gone'
        ? [
            'Why: it answered 410 Gone, which says the endpoint no longer exists, so gw stopped',
            'sending to it at once.',
            `Failing since: ${failingSince} (last successful delivery: ${lastSuccess}).`,
          ]
        : [
            `Why: every delivery to it failed for ${duration(this.settings.disableAfterMs)}: no`,
            `delivery has succeeded since ${failingSince} (last successful delivery: ${lastSuccess}).`,
          ];
    return {
      purpose: 'webhook_disabled',
      to: recipient.email,
      subject: `A webhook endpoint of ${orgName} was disabled`,
      text: [
        opening,
        `was disabled by gw at ${(recipient.disabled_at ?? new Date()).toISOString()}: nothing is sent to it now.`,
        '',
        endpointLine,
        ...why,
        '',
        'Nothing is lost yet: the messages it missed since it began failing, and those of the',
        'events that happen while it is disabled, are kept for it ' +
          `(${this.settings.retentionDays} days). Once the receiver works again, enable the`,
        "endpoint on the organization's webhooks page, and gw sends it everything that waited at",
        'once, oldest first:',
        '',
        this.webhooksPage(endpoint.org_id),
        '',
        'If the endpoint is no longer needed, delete it there instead.',
        '',
        closing,
      ].join('\n'),
    };
  }

  private warning(endpoint: EndpointRow, recipient: Recipient): OutgoingMail {
    const { orgName, opening, endpointLine, closing } = this.about(endpoint, recipient);
    const failingSince = recipient.failing_since!;
    const disableAt = new Date(failingSince.getTime() + this.settings.disableAfterMs);
    return {
      purpose: 'webhook_failing',
      to: recipient.email,
      subject: `A webhook endpoint of ${orgName} is failing`,
      text: [
        opening,
        `has failed every delivery since ${failingSince.toISOString()}.`,
        '',
        endpointLine,
        `Last successful delivery: ${recipient.last_success_at?.toISOString() ?? 'never'}.`,
        '',
        'gw keeps trying each message on its schedule. If no delivery succeeds by',
        `${disableAt.toISOString()}, gw disables the endpoint (its messages then wait for it).`,
        "The delivery log on the organization's webhooks page shows each attempt's status and",
        'answer, or why there was none:',
        '',
        this.webhooksPage(endpoint.org_id),
        '',
        closing,
      ].join('\n'),
    };
  }
}

/** A notice waits NOTICE_TTL_MS, and goes only to a reader still an owner or admin then. */
function queueOptions(endpoint: EndpointRow, recipient: Recipient): QueueOptions {
  return {
    expiresInMs: NOTICE_TTL_MS,
    reader: { orgId: endpoint.org_id, userId: recipient.user_id, roles: NOTICE_ROLES },
  };
}

/**
 * The URL's host (and port, if not the scheme's own): its path and query may be a credential.
 */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an address not shown here';
  }
}

/**
 * Text another person typed, fit to quote on a line of a mail: control and format characters
 * (a line break, a bidirectional override; the CLI does not refuse them in a description) as
 * spaces, and at most MAX_QUOTED_CHARS code points.
 */
function quotable(text: string): string {
  const flat = text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu, ' ').trim();
  const points = [...flat];
  return points.length <= MAX_QUOTED_CHARS
    ? flat
    : `${points.slice(0, MAX_QUOTED_CHARS).join('')}…`;
}

/** WEBHOOK_DISABLE_AFTER_S in words: "5 days", "36 hours", "90 minutes", "30 seconds". */
function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const units: Array<[number, string]> = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, unit] of units) {
    if (seconds >= size * 2 || seconds === size) {
      const count = Math.round(seconds / size);
      return `${count} ${unit}${count === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}
