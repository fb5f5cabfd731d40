-- credits-change: applies a new grant or a revocation to a user's live credits in one
-- currency.
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- ARGV[1] action         'add' | 'remove'
-- ARGV[2] grant_id
-- ARGV[3] amount_nano    (add) the grant's amount
-- ARGV[4] expires_at_ms  (add) its expiry
-- ARGV[5] ttl_ms         how long a revocation is remembered when the credits are not loaded
--
-- Returns 1 when something changed. A grant added before the user's credits are loaded is
-- kept; credits-load merges the rest around it. A revoked grant leaves a `revoked:<id>` mark
-- that credits-load honours: a load that read Postgres before the revocation cannot bring the
-- grant back. An amount out of range is refused with nothing written.
--#include amounts

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
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'revoked:' .. ARGV[2], '1')
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
return redis.call('HDEL', KEYS[1], 'g:' .. ARGV[2])
