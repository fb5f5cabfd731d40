-- release: takes back what a reserve of one request may have held, for a request that will
-- never settle: its reserve was given up on (no answer within REDIS_TIMEOUT_MS), the client was
-- answered 503, and the reserve may still run once Redis answers again. Sent on the same
-- connection right after it, so Redis runs it after the reserve (decision 318). Writes no
-- usage record and charges nothing: the vendor was never called. Running it again, or for a
-- reserve that held nothing, changes nothing.
--
-- KEYS[1] wallet               hash { balance, reserved }
-- KEYS[2] wallet_expiries      zset '<request_id>:<amount>' -> hold expiry (ms)
-- KEYS[3] org_cap              hash { spent, reserved }
-- KEYS[4] org_cap_expiries
-- KEYS[5] conn_cap             hash { spent, reserved }
-- KEYS[6] conn_cap_expiries
-- KEYS[7] user_spend           hash { spent, reserved }
-- KEYS[8] user_spend_expiries
-- KEYS[9] in_flight            hash request_id -> draft (reserve.lua): this request's goes
--
-- ARGV[1] request_id
-- ARGV[2] held_nano            the amount the reserve held on each account
--
-- Returns {released}: how many holds were still there.
--#include amounts
--#include release-hold

local request_id = ARGV[1]
amount(ARGV[2], 'held_nano')
if type(request_id) ~= 'string' or request_id == '' then
  error('gw_invalid_argument: request_id is empty')
end
local member = request_id .. ':' .. ARGV[2]
local released = 0
for index = 1, 7, 2 do
  if redis.call('EXISTS', KEYS[index]) == 1 then
    if release_hold(KEYS[index], KEYS[index + 1], member) then released = released + 1 end
  else
    -- An account gone from Redis keeps no `reserved` to lower (it is rebuilt from Postgres).
    redis.call('ZREM', KEYS[index + 1], member)
  end
end
redis.call('HDEL', KEYS[9], request_id)
return {released}
