-- reserve: atomically check the paying wallet and hold the request's estimated cost.
--
-- KEYS[1] wallet            hash { balance, reserved, r:<request_id> }
-- KEYS[2] wallet_expiries   zset request_id -> hold expiry (ms)
--
-- ARGV[1] request_id
-- ARGV[2] amount_nano       integer string: the worst-case cost to hold
-- ARGV[3] now_ms
-- ARGV[4] expires_at_ms     when the hold lapses if never settled (crashed instance)
-- ARGV[5] wallet_pays       '1' when the org wallet pays, '0' when something else does
--
-- Returns {code, ...}:
--   {0}                         held
--   {1}                         wallet not loaded: load it from Postgres, then retry
--   {2, available_nano}         the wallet cannot cover amount_nano (nothing held)
--
-- Amounts are only compared here (tonumber); every change goes through HINCRBY.
--#include release-hold
--#include sweep-expired

local wallet, wallet_expiries = KEYS[1], KEYS[2]
local request_id, amount, now_ms, expires_at_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

if ARGV[5] ~= '1' then
  return {0}
end

if redis.call('EXISTS', wallet) == 0 then
  return {1}
end

sweep_expired(wallet, wallet_expiries, now_ms, 20)

local state = redis.call('HMGET', wallet, 'balance', 'reserved')
local available = tonumber(state[1]) - tonumber(state[2] or '0')
if available < tonumber(amount) then
  return {2, tostring(math.max(available, 0))}
end

redis.call('HINCRBY', wallet, 'reserved', amount)
redis.call('HSET', wallet, 'r:' .. request_id, amount)
redis.call('ZADD', wallet_expiries, expires_at_ms, request_id)
return {0}
