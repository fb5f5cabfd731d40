-- Releases one hold ('<request_id>:<amount>', see hold) of an account if it is still listed;
-- returns true when it was. The caller has checked that the account exists: HINCRBY on an
-- account missing from Redis would recreate it partially.
local function release_hold(account, expiries, member)
  if redis.call('ZREM', expiries, member) == 0 then
    return false
  end
  local amount = string.match(member, ':(%d+)$') or '0'
  if amount ~= '0' then
    redis.call('HINCRBY', account, 'reserved', '-' .. amount)
  end
  return true
end
