-- Places a hold of `amount` for one request on one account (needs nothing else included).
local function hold(account, expiries, request_id, amount, expires_at_ms)
  redis.call('HINCRBY', account, 'reserved', amount)
  redis.call('HSET', account, 'r:' .. request_id, amount)
  redis.call('ZADD', expiries, expires_at_ms, request_id)
end
