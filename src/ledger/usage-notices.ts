// Stream entries that are not usage records: facts a Lua script noted for the webhooks on
// its way (today: a BYOK credential that failover.lua started cooling down). They travel in
// the org's usage stream because the writer reads it anyway, and the script that noted them
// was already on the request path: no extra round trip, no extra write.

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

const NOTICE_TYPES: ReadonlySet<string> = new Set<NoticeType>([
  'provider_credential.failed_over',
  'provider_credential.rejected',
]);

export class UsageNoticeFormatError extends Error {
  override readonly name = 'UsageNoticeFormatError';
}

/** True for an entry that carries a notice (an `event` field) rather than a record. */
export function isNoticeEntry(fields: readonly string[]): boolean {
  return fields[0] === 'event';
}

/** Reads a notice entry; throws UsageNoticeFormatError on one this version cannot read. */
export function usageNoticeFromFields(fields: readonly string[]): UsageNotice {
  const map = new Map<string, string>();
  for (let index = 0; index + 1 < fields.length; index += 2) {
    map.set(fields[index]!, fields[index + 1]!);
  }
  const type = map.get('event') ?? '';
  if (!NOTICE_TYPES.has(type)) throw new UsageNoticeFormatError(`unknown notice ${type}`);
  const text = (name: string): string => {
    const value = map.get(name);
    if (value === undefined || value === '')
      throw new UsageNoticeFormatError(`notice entry lacks ${name}`);
    return value;
  };
  const integer = (name: string): number => {
    const value = Number(text(name));
    if (!Number.isSafeInteger(value))
      throw new UsageNoticeFormatError(`notice entry ${name} is not an integer`);
    return value;
  };
  return {
    type: type as NoticeType,
    orgId: text('org_id'),
    credentialId: text('credential_id'),
    requestId: text('request_id'),
    upstreamStatus: integer('upstream_status'),
    cooldownUntilMs: integer('cooldown_until_ms'),
    atMs: integer('at_ms'),
  };
}
