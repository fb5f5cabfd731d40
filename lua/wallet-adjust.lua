-- wallet-adjust: changes a loaded wallet's balance (top-up or set) for the admin tools.
--
-- KEYS[1] wallet       hash { balance, reserved }
-- KEYS[2] adjustment   string: this change's answer, once it ran (one key per change, named
--                      by the caller: a top-up's ledger transaction, or a fresh id)
-- ARGV[1] mode         'add' (ARGV[2] is a delta) or 'set' (ARGV[2] is the new balance)
-- ARGV[2] amount_nano  integer string
-- ARGV[3] adjustment_ttl_ms  how long the change is remembered
--
-- Returns {0} when the wallet is not loaded (Postgres alone holds the change; the callers put
-- it in Redis first, so only a Redis that lost it since: decision 301),
-- {1, previous_balance_nano} otherwise. The new balance must stay in range (includes/
-- amounts.lua): otherwise nothing is written.
-- A change runs once: sent again (ioredis writes an unanswered command again on a new
-- connection, and Redis may also run it from the old one once it resumes: decision 318) it
-- returns its first answer and changes nothing. Without this a top-up given up on during a
-- Redis hang was added twice to the live balance, once to the ledger.
--#include amounts

local mode = one_of(ARGV[1], 'mode', {'add', 'set'})
local value = amount(ARGV[2], 'amount_nano', true)
local ttl_ms = integer(ARGV[3], 'adjustment_ttl_ms')
if ttl_ms < 1 then error('gw_invalid_argument: adjustment_ttl_ms is 0') end
local done = redis.call('GET', KEYS[2])
if done then
  if done == '' then return {0} end
  return {1, done}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[2], '', 'PX', ttl_ms)
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
redis.call('SET', KEYS[2], previous or '0', 'PX', ttl_ms)
return {1, previous or '0'}
