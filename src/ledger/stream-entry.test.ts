// Reading usage stream entries: each kind refuses what it cannot read with its own error.
import { describe, expect, it } from 'vitest';
import { usageNoticeFromFields, UsageNoticeFormatError } from './usage-notices.js';
import { usageRecordFromFields, UsageRecordFormatError } from './usage-record.js';
import { FAILOVER_NOTICE_FIELDS } from '../../test/support/records.js';

const notice = [...FAILOVER_NOTICE_FIELDS];

describe('usage stream entries', () => {
  it('reads a notice, and refuses an empty or a non-integer field as a notice error', () => {
    expect(usageNoticeFromFields(notice)).toEqual({
      type: 'provider_credential.failed_over',
      orgId: 'org_1',
      credentialId: 'cred_1',
      requestId: 'req_1',
      upstreamStatus: 429,
      cooldownUntilMs: 1000,
      atMs: 900,
    });
    const empty = notice.map((value, index) => (notice[index - 1] === 'org_id' ? '' : value));
    expect(() => usageNoticeFromFields(empty)).toThrow(
      new UsageNoticeFormatError('notice entry lacks org_id'),
    );
    const fractional = notice.map((value, index) =>
      notice[index - 1] === 'at_ms' ? '1.5' : value,
    );
    expect(() => usageNoticeFromFields(fractional)).toThrow(
      new UsageNoticeFormatError('notice entry at_ms is not an integer'),
    );
  });

  it('refuses a record without a field, or with a field that is not an integer, as a record error', () => {
    const packed = { request_id: 'req_1', created_at: '2026-11-01T00:00:00.000Z' };
    expect(() => usageRecordFromFields(['record', JSON.stringify(packed)])).toThrow(
      new UsageRecordFormatError('usage entry lacks route'),
    );
    expect(() => usageRecordFromFields(['record', '{not json'])).toThrow(UsageRecordFormatError);
  });
});
