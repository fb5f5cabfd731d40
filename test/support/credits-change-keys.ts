// credits-change.lua's KEYS for one product user's credits in one currency: their spend
// accounts of the period `currentKey`, of the one before it (`previousKey`) and of the one
// after it (`nextKey`), and the requests revoked grants keep money for. Periods default to a
// placeholder, for a grant added or revoked where no account is read.
import type { RedisKeys } from '../../src/redis/keys.js';
import type { ScriptKeys } from '../../src/redis/scripts.js';

export function creditsChangeKeys(
  keys: RedisKeys,
  orgId: string,
  userId: string,
  periods: { currentKey?: string; previousKey?: string; nextKey?: string; currency?: string } = {},
): ScriptKeys<'creditsChange'> {
  const currency = periods.currency ?? 'USD';
  const spend = keys.userSpend(orgId, userId, periods.currentKey ?? 'unused');
  const previous = keys.userSpend(orgId, userId, periods.previousKey ?? 'unused');
  const next = keys.userSpend(orgId, userId, periods.nextKey ?? 'unused');
  return {
    user_credits: keys.userCredits(orgId, userId, currency),
    user_grants: keys.userGrants(orgId, userId, currency),
    user_spend: spend,
    user_spend_expiries: keys.holdExpiries(spend),
    previous_spend: previous,
    previous_spend_expiries: keys.holdExpiries(previous),
    draining_for: keys.userDrainingFor(orgId, userId, currency),
    next_spend: next,
    next_spend_expiries: keys.holdExpiries(next),
  };
}
