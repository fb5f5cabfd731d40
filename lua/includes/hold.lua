-- Places a hold of `amount` for one request on one account: the amount joins the account's
-- `reserved`, and the hold is listed in the account's expiries zset as '<request_id>:<amount>',
-- scored by when it lapses. The member carries the amount, so a release needs no other field.
local function hold(account, expiries, request_id, amount, expires_at_ms)
  redis.call('HINCRBY', account, 'reserved', amount)
  redis.call('ZADD', expiries, expires_at_ms, request_id .. ':' .. amount)
end
