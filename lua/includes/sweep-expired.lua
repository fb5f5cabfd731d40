--#include release-hold

-- Releases up to `limit` lapsed holds of one existing account and returns how many it
-- released. expiries: zset '<request_id>:<amount>' -> expiry ms.
local function sweep_expired(account, expiries, now_ms, limit)
  local expired = redis.call('ZRANGEBYSCORE', expiries, '-inf', now_ms, 'LIMIT', 0, limit)
  for _, member in ipairs(expired) do
    release_hold(account, expiries, member)
  end
  return #expired
end
