-- wallet-adjust: changes a loaded wallet's balance (top-up or set) for the admin tools.
--
-- KEYS[1] wallet       hash { balance, reserved }
-- ARGV[1] mode         'add' (ARGV[2] is a delta) or 'set' (ARGV[2] is the new balance)
-- ARGV[2] amount_nano  integer string
--
-- Returns {0} when the wallet is not loaded (Postgres alone holds the change; the callers put
-- it in Redis first, so only a Redis that lost it since: decision 301),
-- {1, previous_balance_nano} otherwise. The new balance must stay in range (includes/
-- amounts.lua): otherwise nothing is written.
--#include amounts

local mode = one_of(ARGV[1], 'mode', {'add', 'set'})
local value = amount(ARGV[2], 'amount_nano', true)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
local previous = redis.call('HGET', KEYS[1], 'balance')
local previous_value = stored_amount(previous, 'wallet balance')
if mode == 'add' then
  amount(string.format('%.0f', previous_value + value), 'the new balance', true)
  redis.call('HINCRBY', KEYS[1], 'balance', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'balance', ARGV[2])
end
return {1, previous or '0'}
