// Which subject each event is about: the messages about one subject keep their order on one
// lane of each endpoint (docs/decisions.md 317).
import { describe, expect, it } from 'vitest';
import { eventSubject } from './events.js';

const ORG = 'org_PvMqv9CDzAZ0RQpb6qbh';
const USER = 'pu_ZaL3vPT1o2zLGS7G0Bmf';

describe('eventSubject', () => {
  it('is the product user for their profile, allowance and grants', () => {
    const user = { product_end_user_id: USER, org_id: ORG, external_user_id: 'customer-42' };
    for (const type of [
      'product_user.created',
      'product_user.blocked',
      'product_user.unblocked',
      'product_user.allowance_threshold',
    ] as const) {
      expect(eventSubject(type, ORG, user), type).toBe(USER);
    }
    const grant = { grant_id: 'grant_emJ83odR5hGIQZU2iUxN', product_end_user_id: USER };
    for (const type of [
      'credit_grant.created',
      'credit_grant.revoked',
      'credit_grant.expired',
    ] as const) {
      expect(eventSubject(type, ORG, grant), type).toBe(USER);
    }
  });

  it('is the object itself for credentials, API keys, connections and the test event', () => {
    expect(eventSubject('provider_credential.rejected', ORG, { id: 'cred_1', org_id: ORG })).toBe(
      'cred_1',
    );
    expect(eventSubject('api_key.revoked', ORG, { id: 'key_1', org_id: ORG })).toBe('key_1');
    expect(eventSubject('api_key.updated', ORG, { id: 'key_1', org_id: ORG })).toBe('key_1');
    expect(eventSubject('oauth_connection.created', ORG, { id: 'conn_1', org_id: ORG })).toBe(
      'conn_1',
    );
    expect(eventSubject('webhook.test', ORG, { id: 'wh_1', org_id: ORG })).toBe('wh_1');
  });

  it('is the organization for its caps and wallet, and for an event without its id', () => {
    expect(eventSubject('cap.threshold', ORG, { cap_rule_id: 'cap_1', org_id: ORG })).toBe(ORG);
    expect(eventSubject('wallet.low_balance', ORG, { org_id: ORG, balance: '1' })).toBe(ORG);
    expect(eventSubject('api_key.created', ORG, { n: 1 })).toBe(ORG);
    expect(eventSubject('product_user.created', ORG, { product_end_user_id: '' })).toBe(ORG);
    expect(eventSubject('credit_grant.created', ORG, null)).toBe(ORG);
  });
});
