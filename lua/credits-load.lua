-- credits-load: merges a user's credit grants in one currency, rebuilt from Postgres, into
-- Redis. Per-grant HSETNX: a grant added or consumed concurrently is never overwritten,
-- never lost; a grant revoked meanwhile (its `revoked:<id>` mark) is not brought back. What
-- revoked grants kept for the requests in flight (`draining`) and what is left on expired
-- grants stay as they are (docs/decisions.md, 289). A grant with nothing left is not listed in
-- the grants zset (decision 305).
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- ARGV[1] ttl_ms         how long the loaded set may stay before it is rebuilt
-- ARGV[2..] grants       grant_id, remaining_nano, expires_at_ms, ... (triples)
--
-- Returns the number of grants installed. Every triple is validated before the first write.
--#include amounts

integer(ARGV[1], 'ttl_ms')
if (#ARGV - 1) % 3 ~= 0 then
  error('gw_invalid_argument: grants must come as grant_id, remaining_nano, expires_at_ms triples')
end
for index = 2, #ARGV, 3 do
  amount(ARGV[index + 1], 'remaining_nano', true)
  integer(ARGV[index + 2], 'expires_at_ms')
end
local installed = 0
for index = 2, #ARGV, 3 do
  if redis.call('HEXISTS', KEYS[1], 'revoked:' .. ARGV[index]) == 0 then
    installed = installed + redis.call('HSETNX', KEYS[1], 'g:' .. ARGV[index], ARGV[index + 1])
    -- A grant with nothing left stays out of the zset that reserves walk (settle.lua takes
    -- out those it empties); its field at 0 keeps a stale load from refilling it.
    if stored_amount(redis.call('HGET', KEYS[1], 'g:' .. ARGV[index]), 'credit') > 0 then
      redis.call('ZADD', KEYS[2], ARGV[index + 2], ARGV[index])
    end
  end
end
redis.call('HSET', KEYS[1], 'loaded', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return installed
