-- credits-change: applies a new grant or a revocation to a user's live credits in one
-- currency.
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- ARGV[1] action         'add' | 'remove'
-- ARGV[2] grant_id
-- ARGV[3] amount_nano    (add) the grant's amount
-- ARGV[4] expires_at_ms  (add) its expiry
--
-- Returns 1 when something changed. A grant added before the user's credits are loaded is
-- kept; credits-load merges the rest around it. An amount out of range is refused with
-- nothing written.
--#include amounts

one_of(ARGV[1], 'action', {'add', 'remove'})
if ARGV[1] == 'add' then
  amount(ARGV[3], 'amount_nano')
  integer(ARGV[4], 'expires_at_ms')
  local added = redis.call('HSETNX', KEYS[1], 'g:' .. ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
  return added
end
redis.call('ZREM', KEYS[2], ARGV[2])
return redis.call('HDEL', KEYS[1], 'g:' .. ARGV[2])
