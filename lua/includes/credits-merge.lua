-- Merges a user's credit grants in one currency, rebuilt from Postgres, into Redis
-- (credits-load.lua's header gives the rules). The grants come as ARGV[first..] triples:
-- grant_id, remaining_nano, expires_at_ms.

-- Validates every triple, and what `credits` holds for each grant that merge_credits reads
-- (before the script's first write: what a 1e18-dollar grant put in Redis before amounts were
-- bounded must not fail the merge once account-rebuild-user has installed the account).
local function credit_triples(first, credits)
  if (#ARGV - first + 1) % 3 ~= 0 then
    error('gw_invalid_argument: grants must come as grant_id, remaining_nano, expires_at_ms triples')
  end
  for index = first, #ARGV, 3 do
    amount(ARGV[index + 1], 'remaining_nano', true)
    integer(ARGV[index + 2], 'expires_at_ms')
    stored_amount(redis.call('HGET', credits, 'g:' .. ARGV[index]), 'credit ' .. ARGV[index])
  end
end

-- Returns the number of grants installed.
local function merge_credits(credits, grants, ttl_ms, first)
  local installed = 0
  for index = first, #ARGV, 3 do
    if redis.call('HEXISTS', credits, 'revoked:' .. ARGV[index]) == 0 then
      installed = installed + redis.call('HSETNX', credits, 'g:' .. ARGV[index], ARGV[index + 1])
      -- A grant with nothing left stays out of the zset that reserves walk (settle.lua takes
      -- out those it empties); its field at 0 keeps a stale load from refilling it.
      if stored_amount(redis.call('HGET', credits, 'g:' .. ARGV[index]), 'credit') > 0 then
        redis.call('ZADD', grants, ARGV[index + 2], ARGV[index])
      end
    end
  end
  redis.call('HSET', credits, 'loaded', '1')
  redis.call('PEXPIRE', credits, ttl_ms)
  redis.call('PEXPIRE', grants, ttl_ms)
  return installed
end
