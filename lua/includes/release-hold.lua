-- Releases the hold of one request on one account, if it still exists.
-- account: hash with field `reserved` and one field `r:<request_id>` per live hold.
local function release_hold(account, expiries, request_id)
  local held = redis.call('HGET', account, 'r:' .. request_id)
  if held then
    if held ~= '0' then
      redis.call('HINCRBY', account, 'reserved', '-' .. held)
    end
    redis.call('HDEL', account, 'r:' .. request_id)
  end
  redis.call('ZREM', expiries, request_id)
end
