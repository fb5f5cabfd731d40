-- Sum of the remaining amounts of a user's unexpired credit grants (a comparison value only:
-- never written back). grants: zset grant_id -> expiry ms; credits: hash g:<grant_id> -> nano.
local function credits_available(credits, grants, now_ms)
  local total = 0
  local live = redis.call('ZRANGEBYSCORE', grants, '(' .. now_ms, '+inf')
  for _, grant_id in ipairs(live) do
    total = total + tonumber(redis.call('HGET', credits, 'g:' .. grant_id) or '0')
  end
  return total
end
