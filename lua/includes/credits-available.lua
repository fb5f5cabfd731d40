--#include amounts

-- The unexpired credit grants of a user with what is left on each, earliest expiry first,
-- and their sum: {grant_id, remaining} pairs and the total. Every remaining amount is
-- validated, and so is the total (it must stay an exact Lua number). grants: zset grant_id
-- -> expiry ms; credits: hash g:<grant_id> -> nano.
local function live_credits(credits, grants, now_ms)
  local live = redis.call('ZRANGEBYSCORE', grants, '(' .. now_ms, '+inf')
  local listed, total = {}, 0
  for _, grant_id in ipairs(live) do
    local remaining = stored_amount(redis.call('HGET', credits, 'g:' .. grant_id), 'credit ' .. grant_id)
    if remaining > 0 then
      listed[#listed + 1] = {grant_id, remaining}
      total = total + remaining
    end
  end
  if total >= AMOUNT_LIMIT then
    error('gw_amount_out_of_range: the credits of one user add up beyond 2^51 nano-units')
  end
  return listed, total
end
