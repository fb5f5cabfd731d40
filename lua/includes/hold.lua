-- Places a hold of `amount` for one request on one account: the amount joins the account's
-- `reserved`, and the hold is listed in the account's expiries zset as '<request_id>:<amount>',
-- scored by when it lapses. The member carries the amount, so a release needs no other field.
-- A hold already listed is not counted again (only its lapse moves): a reserve that runs twice
-- (ioredis sends a command again on a new connection when the old one closed before its
-- answer, and it may have run there) holds once, so the one release of it leaves `reserved`
-- exact (decision 318).
local function hold(account, expiries, request_id, amount, expires_at_ms)
  if redis.call('ZADD', expiries, expires_at_ms, request_id .. ':' .. amount) == 1 then
    redis.call('HINCRBY', account, 'reserved', amount)
  end
end
