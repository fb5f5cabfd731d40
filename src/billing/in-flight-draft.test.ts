import { describe, expect, it } from 'vitest';
import { lostRecord } from '../../test/support/records.js';
import type { SettleAccounts } from './budget-store.js';
import { decodeDraft, DraftFormatError, encodeDraft } from './in-flight-draft.js';

const record = lostRecord('org_1', {
  createdAt: new Date(1_764_000_000_000),
  oauthClientId: 'client_1',
  model: 'vendor_a/claude-3-5-haiku',
  vendor: 'vendor_a',
  stream: true,
  reservedNano: 9_007_199_254_740_993n, // past 2^53: kept exact
});
const accounts: SettleAccounts = {
  orgId: 'org_1',
  appConnectionId: 'conn_1',
  orgCap: null,
  connectionCap: { capNano: 5_000_000n, period: { key: '1764547200000' } },
  user: { productUserId: 'pu_1', capNano: 70n, creditMode: 'enforce', period: { key: '17' } },
};

describe('in-flight drafts', () => {
  it('keep the record and the accounts exactly, in a few hundred bytes', () => {
    const draft = { instance: 'inst_1', lapsesAtMs: 1_764_000_600_000 };
    const text = encodeDraft({ ...draft, record, accounts });
    expect(text.length).toBeLessThan(500);
    expect(decodeDraft(text)).toEqual({ ...draft, record, accounts });
  });

  it('refuses what is not a draft of this version', () => {
    expect(() => decodeDraft('not json')).toThrow(DraftFormatError);
    expect(() => decodeDraft('[2,"inst"]')).toThrow(DraftFormatError);
    expect(() => decodeDraft('[1,"inst",1]')).toThrow(DraftFormatError);
  });
});
