// release.lua's KEYS for a request held on the wallet (and, when named, a product user's spend
// account): the other accounts and the rate buckets are placeholders in the org's slot.
import type { RedisKeys } from '../../src/redis/keys.js';
import type { ScriptKeys } from '../../src/redis/scripts.js';

export function releaseKeys(
  keys: RedisKeys,
  orgId: string,
  userSpend?: string,
): ScriptKeys<'release'> {
  const unused = keys.orgCap(orgId, 'unused');
  const spend = userSpend ?? unused;
  return {
    wallet: keys.wallet(orgId),
    wallet_expiries: keys.holdExpiries(keys.wallet(orgId)),
    org_cap: unused,
    org_cap_expiries: keys.holdExpiries(unused),
    conn_cap: unused,
    conn_cap_expiries: keys.holdExpiries(unused),
    user_spend: spend,
    user_spend_expiries: keys.holdExpiries(spend),
    in_flight: keys.inFlight(orgId),
    key_rate: unused,
    user_rate: unused,
  };
}
