-- rate-limit: one request against one request-rate bucket, for a route that holds no money:
-- POST /v1/messages/count_tokens, whose counts have a bucket of their own per API key
-- (decision 353). The arrival is recorded when the request passes, once per request: a count
-- sent again after a reconnect, having run on the old connection (decision 318), finds its
-- marker and is not counted again (decision 364). Inference requests are counted by
-- reserve.lua, with their hold.
--
-- KEYS[1] bucket       string: the bucket's theoretical arrival time (includes/rate-take.lua)
-- KEYS[2] counted      string: this request was counted (its request id; same slot)
--
-- ARGV[1] limit          requests per minute, 1..1,000,000
-- ARGV[2] now_ms
-- ARGV[3] counted_ttl_ms how long the marker outlives the count (> 0)
--
-- Returns {code, ...}:
--   {0, remaining, reset_ms}         passed and counted (or counted already, by an earlier run
--                                    of this request): the requests the bucket still passes
--                                    now, and the ms until it is full again
--   {6, retry_after_ms, reset_ms}    the limit is reached: the wait until one passes, and the
--                                    ms until the bucket is full again; nothing written
--#include rate-take

if ARGV[1] == '' then error('gw_invalid_argument: limit is empty') end
local limit = rate_limit(ARGV[1], 'limit')
local now = integer(ARGV[2], 'now_ms')
local counted_ttl = integer(ARGV[3], 'counted_ttl_ms')
if counted_ttl < 1 then error('gw_invalid_argument: counted_ttl_ms must be positive') end
if redis.call('EXISTS', KEYS[2]) == 1 then
  local remaining, reset_ms = rate_left(rate_debt(KEYS[1], limit, now), limit)
  return {0, remaining, reset_ms}
end
local passes, tat_or_wait, expiry_or_debt, after = rate_take(KEYS[1], limit, now)
if not passes then
  local _, reset_ms = rate_left(expiry_or_debt, limit)
  return {6, tat_or_wait, reset_ms}
end
redis.call('SET', KEYS[1], tat_or_wait, 'PX', expiry_or_debt)
redis.call('SET', KEYS[2], '1', 'PX', counted_ttl)
local remaining, reset_ms = rate_left(after, limit)
return {0, remaining, reset_ms}
