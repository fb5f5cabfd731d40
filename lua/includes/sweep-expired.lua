-- Releases up to `limit` expired holds of one account (needs release-hold included first) and
-- returns how many it released. expiries: zset request_id -> expiry in ms.
local function sweep_expired(account, expiries, now_ms, limit)
  local expired = redis.call('ZRANGEBYSCORE', expiries, '-inf', now_ms, 'LIMIT', 0, limit)
  for _, request_id in ipairs(expired) do
    release_hold(account, expiries, request_id)
  end
  return #expired
end
