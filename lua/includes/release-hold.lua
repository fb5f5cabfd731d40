-- Releases the hold of one request on one account, if it still exists; returns true when it
-- did (so the account exists too).
-- account: hash with field `reserved` and one field `r:<request_id>` per live hold.
local function release_hold(account, expiries, request_id)
  local held = redis.call('HGET', account, 'r:' .. request_id)
  redis.call('ZREM', expiries, request_id)
  if not held then
    return false
  end
  if held ~= '0' then
    redis.call('HINCRBY', account, 'reserved', '-' .. held)
  end
  redis.call('HDEL', account, 'r:' .. request_id)
  return true
end
