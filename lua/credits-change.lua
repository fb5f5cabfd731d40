-- credits-change: applies a new grant or a revocation to a user's live credits in one
-- currency.
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> -> when
--                        it was revoked (ms), draining -> 'id1,id2' }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- KEYS[3] user_spend     (remove) the user's account of the current period: its `reserved`
--                        is what the user's requests in flight hold
-- KEYS[4] user_spend_expiries  its holds (lapsed ones are released first)
-- KEYS[5] previous_spend (remove) the user's account of the period before: a request admitted
--                        before the period turned holds there until it settles
-- KEYS[6] previous_spend_expiries  its holds
-- ARGV[1] action         'add' | 'remove'
-- ARGV[2] grant_id
-- ARGV[3] amount_nano    (add) the grant's amount
-- ARGV[4] expires_at_ms  (add) its expiry
-- ARGV[5] ttl_ms         how long a revocation is remembered when the credits are not loaded
-- ARGV[6] now_ms         (remove)
-- ARGV[7] keep_held      (remove) '1' when the grant's credits may pay the user's requests in
--                        flight (settlement currency), else '0'
--
-- Returns 1 when something changed. A grant added before the user's credits are loaded is
-- kept; credits-load merges the rest around it. A revoked grant leaves a `revoked:<id>` mark
-- that credits-load honours: a load that read Postgres before the revocation cannot bring the
-- grant back. An amount out of range is refused with nothing written.
--
-- A revocation takes what is neither spent nor held (docs/charging.md, "Credits revoked in
-- flight"): while the user's requests in flight hold money, the grant keeps up to what they
-- hold, out of `user_grants` (no new request counts it) and listed in `draining`; settle.lua
-- lets it pay what the base allowance and the live credits cannot, and drops what is left of
-- it once the user has nothing in flight.
--#include amounts
--#include sweep-expired

one_of(ARGV[1], 'action', {'add', 'remove'})
if ARGV[1] == 'add' then
  amount(ARGV[3], 'amount_nano')
  integer(ARGV[4], 'expires_at_ms')
  if redis.call('HEXISTS', KEYS[1], 'revoked:' .. ARGV[2]) == 1 then
    return 0
  end
  local added = redis.call('HSETNX', KEYS[1], 'g:' .. ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
  return added
end
integer(ARGV[5], 'ttl_ms')
local now_ms = integer(ARGV[6], 'now_ms')
one_of(ARGV[7], 'keep_held', {'1', '0'})
local field = 'g:' .. ARGV[2]

-- What one of the user's period accounts holds for requests in flight (0 when it is not in
-- Redis), its lapsed holds released first.
local function held_on(account, expiries)
  if redis.call('EXISTS', account) == 0 then return 0 end
  local reserved = stored_amount(redis.call('HGET', account, 'reserved'), 'user reserved')
  if reserved > 0 and sweep_expired(account, expiries, now_ms, 20) > 0 then
    reserved = stored_amount(redis.call('HGET', account, 'reserved'), 'user reserved')
  end
  return reserved
end

-- What the grant keeps: up to what the user's requests in flight hold (any of it may end up
-- paid by credits), never more than it has left. Those admitted before the period turned hold
-- on the previous period's account (docs/decisions.md, 404).
local kept = 0
local remaining_text = redis.call('HGET', KEYS[1], field)
if ARGV[7] == '1' and remaining_text and redis.call('HEXISTS', KEYS[1], 'loaded') == 1 then
  local remaining = stored_amount(remaining_text, 'credit ' .. ARGV[2])
  local reserved = held_on(KEYS[3], KEYS[4])
  if KEYS[5] ~= KEYS[3] then reserved = reserved + held_on(KEYS[5], KEYS[6]) end
  kept = math.max(0, math.min(remaining, reserved))
end

redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'revoked:' .. ARGV[2], ARGV[6])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
if kept > 0 then
  redis.call('HSET', KEYS[1], field, string.format('%.0f', kept))
  local draining = redis.call('HGET', KEYS[1], 'draining')
  redis.call('HSET', KEYS[1], 'draining', draining and (draining .. ',' .. ARGV[2]) or ARGV[2])
  return 1
end
return redis.call('HDEL', KEYS[1], field)
