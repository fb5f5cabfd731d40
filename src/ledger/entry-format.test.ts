// Which stream entries a writer of this version can write whole: everything this version's
// gateways and Lua scripts write, and nothing that names a field or a notice it does not know.
import { describe, expect, it } from 'vitest';
import { KNOWN_ENTRY_NAMES, unknownEntryNames } from './entry-format.js';
import { usageRecordToFields, type UsageRecord } from './usage-record.js';
import { FAILOVER_NOTICE_FIELDS } from '../../test/support/records.js';

const record: UsageRecord = {
  requestId: '0190c7a2-0000-7000-8000-000000000001',
  createdAt: new Date('2026-01-01T00:00:00Z'),
  orgId: 'org_1',
  appId: 'app_1',
  appConnectionId: 'conn_1',
  apiKeyId: 'key_1',
  oauthClientId: 'oc_1',
  productUserId: 'pu_1',
  model: 'vendor_a/model',
  vendor: 'vendor_a',
  route: 'system',
  credentialId: null,
  stream: true,
  status: 'completed',
  upstreamStatus: 200,
  inputTokens: 100,
  outputTokens: 5,
  cacheWriteTokens: 10,
  cacheWrite1hTokens: 2,
  cacheReadTokens: 30,
  webSearchRequests: 1,
  currency: 'USD',
  sellCostNano: 10n,
  vendorCostNano: 8n,
  walletCostNano: 10n,
  reservedNano: 20n,
  latencyMs: 3,
  endReason: 'completed',
  servedByMock: false,
};

/** The entry as settle.lua appends it: the packed record and what the script adds beside it. */
const settled = [
  ...usageRecordToFields(record),
  'credits_cost_nano',
  '0',
  'credit_consumption',
  '',
  'threshold_crossings',
  'user:0.8:800:1000:1767225600000',
  'wallet_balance_after',
  '90',
];

const notice = [...FAILOVER_NOTICE_FIELDS];

/** The entry with `name: value` added inside its packed record. */
function withPacked(fields: readonly string[], name: string, value: unknown): string[] {
  const packed = JSON.parse(fields[1]!) as Record<string, unknown>;
  return ['record', JSON.stringify({ ...packed, [name]: value }), ...fields.slice(2)];
}

describe('entries of a newer version', () => {
  it('knows every name this version writes: a settled record, an older flat one, a notice', () => {
    expect(unknownEntryNames(settled)).toEqual([]);
    const packed = JSON.parse(settled[1]!) as Record<string, string>;
    const flat = Object.entries(packed).flat(); // records were written so before packing
    expect(unknownEntryNames(flat)).toEqual([]);
    expect(unknownEntryNames(notice)).toEqual([]);
    expect(
      unknownEntryNames(notice.map((value) => value.replace('failed_over', 'rejected'))),
    ).toEqual([]);
  });

  it('names a field it does not know, packed or beside the record, and a new notice type', () => {
    expect(unknownEntryNames(withPacked(settled, 'web_fetch_requests', '2'))).toEqual([
      'web_fetch_requests',
    ]);
    expect(unknownEntryNames([...settled, 'refund_nano', '5'])).toEqual(['refund_nano']);
    expect(unknownEntryNames([...notice, 'retry_after_ms', '10'])).toEqual([
      'notice.retry_after_ms',
    ]);
    // A notice's field is not a record's.
    expect(unknownEntryNames([...settled, 'at_ms', '900'])).toEqual(['at_ms']);
    expect(
      unknownEntryNames(notice.map((value) => value.replace('failed_over', 'revoked'))),
    ).toEqual(['event=provider_credential.revoked']);
  });

  it('treats a packed value that is not text as unknown, even under a known name', () => {
    expect(unknownEntryNames(withPacked(settled, 'cache_read_tokens', 30))).toEqual([
      'cache_read_tokens:number',
    ]);
  });

  it('knows a field only with it: a writer of the version before it leaves the record', () => {
    const beforeSearches = new Set(KNOWN_ENTRY_NAMES);
    beforeSearches.delete('web_search_requests');
    expect(unknownEntryNames(settled, beforeSearches)).toEqual(['web_search_requests']);
  });

  it('leaves an entry that cannot be read at all to the reader (dead-lettered as before)', () => {
    expect(unknownEntryNames(['record', '{not json'])).toEqual([]);
  });
});
