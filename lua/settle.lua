-- settle: once per request, move the actual cost from held to spent, release the rest of the
-- hold, and append the usage record to the org's usage stream — all in one atomic step.
--
-- KEYS[1] wallet            hash { balance, reserved, r:<request_id> }
-- KEYS[2] wallet_expiries   zset request_id -> hold expiry (ms)
-- KEYS[3] settled_marker    string, exists once the request is settled
-- KEYS[4] usage_stream      stream of usage records
--
-- ARGV[1] request_id
-- ARGV[2] wallet_cost_nano  integer string charged to the wallet ('0' when it did not pay)
-- ARGV[3] marker_ttl_s
-- ARGV[4..] the usage record as field, value, field, value, ...
--
-- Returns {0, stream_entry_id} when settled now, {1} when it had been settled before.
-- A hold that already expired is simply gone: the cost is still charged and recorded.
--#include release-hold

local wallet, wallet_expiries, marker, stream = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local request_id, wallet_cost, marker_ttl = ARGV[1], ARGV[2], ARGV[3]

if redis.call('EXISTS', marker) == 1 then
  return {1}
end

release_hold(wallet, wallet_expiries, request_id)
-- A wallet evicted from Redis is rebuilt from Postgres, where this record will be counted.
if wallet_cost ~= '0' and redis.call('EXISTS', wallet) == 1 then
  redis.call('HINCRBY', wallet, 'balance', '-' .. wallet_cost)
end

local record = {}
for index = 4, #ARGV do
  record[#record + 1] = ARGV[index]
end
local entry_id = redis.call('XADD', stream, '*', unpack(record))
redis.call('SET', marker, '1', 'EX', marker_ttl)
return {0, entry_id}
