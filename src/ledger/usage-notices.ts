// Stream entries that are not usage records: facts a Lua script noted for the webhooks on
// its way (today: a BYOK credential that failover.lua started cooling down). They travel in
// the org's usage stream because the writer reads it anyway, and the script that noted them
// was already on the request path: no extra round trip, no extra write.
import { StreamEntryFields } from './stream-entry.js';

export type NoticeType = 'provider_credential.failed_over' | 'provider_credential.rejected';

export interface CredentialFailureNotice {
  readonly type: NoticeType;
  readonly orgId: string;
  readonly credentialId: string;
  readonly requestId: string;
  readonly upstreamStatus: number;
  readonly cooldownUntilMs: number;
  readonly atMs: number;
}

export type UsageNotice = CredentialFailureNotice;

export const NOTICE_TYPES: ReadonlySet<string> = new Set<NoticeType>([
  'provider_credential.failed_over',
  'provider_credential.rejected',
]);

/** Every field name a notice entry of this version may carry (as usage-record.ts's list). */
export const USAGE_NOTICE_FIELDS = [
  'event',
  'org_id',
  'credential_id',
  'request_id',
  'upstream_status',
  'cooldown_until_ms',
  'at_ms',
] as const;

type UsageNoticeField = (typeof USAGE_NOTICE_FIELDS)[number];

export class UsageNoticeFormatError extends Error {
  override readonly name = 'UsageNoticeFormatError';
}

/** True for an entry that carries a notice (an `event` field) rather than a record. */
export function isNoticeEntry(fields: readonly string[]): boolean {
  return fields[0] === 'event';
}

/** Reads a notice entry; throws UsageNoticeFormatError on one this version cannot read. */
export function usageNoticeFromFields(fields: readonly string[]): UsageNotice {
  const entry = new StreamEntryFields<UsageNoticeField>(
    fields,
    (message) => new UsageNoticeFormatError(message),
    'notice',
    true,
  );
  const type = entry.get('event') ?? '';
  if (!NOTICE_TYPES.has(type)) throw new UsageNoticeFormatError(`unknown notice ${type}`);
  return {
    type: type as NoticeType,
    orgId: entry.text('org_id'),
    credentialId: entry.text('credential_id'),
    requestId: entry.text('request_id'),
    upstreamStatus: entry.integer('upstream_status'),
    cooldownUntilMs: entry.integer('cooldown_until_ms'),
    atMs: entry.integer('at_ms'),
  };
}
