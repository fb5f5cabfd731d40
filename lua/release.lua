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
-- KEYS[10] key_rate            string: the API key's request-rate bucket (reserve.lua)
-- KEYS[11] user_rate           string: the product user's bucket under that key
--
-- ARGV[1] request_id
-- ARGV[2] held_nano            the amount the reserve held on each account
-- ARGV[3] key_rated            '1' when the reserve counted the request in KEYS[10], else '0'
-- ARGV[4] user_rated           '1' when it counted it in KEYS[11], else '0'
--
-- A reserve that held wrote the request's draft, and counted its arrival in each bucket it was
-- given, once (reserve.lua): when the draft is still there, each of those gives one request
-- back (decision 353). A reserve that did not run, or did not hold, counted nothing.
--
-- Returns {released, rates}: how many holds were still there, how many buckets gave one back.
--#include amounts
--#include release-hold
--#include rate-take

local request_id = ARGV[1]
amount(ARGV[2], 'held_nano')
one_of(ARGV[3], 'key_rated', {'1', '0'})
one_of(ARGV[4], 'user_rated', {'1', '0'})
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
local rates = 0
if redis.call('HDEL', KEYS[9], request_id) == 1 then
  for index, rated in ipairs({ARGV[3], ARGV[4]}) do
    if rated == '1' and rate_give_back(KEYS[9 + index]) then rates = rates + 1 end
  end
end
return {released, rates}
