--#include amounts

-- Request rate limits (GCRA; docs/decisions.md 344): a bucket of `limit` requests refilled
-- continuously at `limit` per minute, so bursts of up to `limit`, then `limit` a minute. Its
-- key holds the theoretical arrival time (TAT) as '<ms>:<part>:<limit>', part in 1/limit ms:
-- counted in units of 1/limit ms, one request is exactly 60000 units and a full bucket
-- 60000 * limit (one minute), exact integers whichever limit (7 a minute is 8571 3/7 ms
-- apart). Every value stays below 6e10, exact in a Lua number.
local RATE_WINDOW_MS = 60000
local RATE_LIMIT_MAX = 1000000

-- A limit argument: '' (none) is nil, else an integer 1..RATE_LIMIT_MAX.
local function rate_limit(text, name)
  if text == '' then return nil end
  local value = integer(text, name)
  if value < 1 or value > RATE_LIMIT_MAX then
    error('gw_invalid_argument: ' .. name .. ' is not an integer from 1 to ' .. RATE_LIMIT_MAX)
  end
  return value
end

-- How far the bucket at `key` is from full at `now` (ms), in units: its TAT's lead over now,
-- at most a full bucket (a TAT further ahead, another instance's clock ahead, counts as full).
local function rate_debt(key, limit, now)
  local debt = 0
  local stored = redis.call('GET', key)
  if stored then
    local tat_ms, part, stored_limit = string.match(stored, '^(%d+):(%d+):(%d+)$')
    if tat_ms then
      tat_ms, part = tonumber(tat_ms), tonumber(part)
      if tonumber(stored_limit) ~= limit then
        -- the limit changed: its part in the old units rounds up to a whole ms
        if part > 0 then tat_ms = tat_ms + 1 end
        part = 0
      end
      if tat_ms >= now then debt = (tat_ms - now) * limit + part end
    end
  end
  local horizon = RATE_WINDOW_MS * limit
  if debt > horizon then debt = horizon end
  return debt
end

-- What a bucket `debt` units from full tells its client (decision 353): the requests that
-- would still pass now, and the ms until it is full again (rounded up). Both exact: a quotient
-- of integers below 6e10 that is not whole is at least 1/60000 from the next whole number.
local function rate_left(debt, limit)
  return math.floor((RATE_WINDOW_MS * limit - debt) / RATE_WINDOW_MS), math.ceil(debt / limit)
end

-- One request against the bucket at `key` at `now` (ms): true, the TAT to store, its expiry
-- (ms: when the bucket is full again) and the debt after it; or false, the wait (ms) until it
-- would pass and the debt it found. It writes nothing: the caller stores the TAT only if the
-- request goes on.
local function rate_take(key, limit, now)
  local debt = rate_debt(key, limit, now)
  local after = debt + RATE_WINDOW_MS
  local horizon = RATE_WINDOW_MS * limit
  if after > horizon then
    return false, math.ceil((after - horizon) / limit), debt
  end
  local ahead_ms = math.floor(after / limit)
  local tat = string.format('%.0f:%.0f:%.0f', now + ahead_ms, after % limit, limit)
  return true, tat, math.ceil(after / limit), after
end

-- Takes one request back out of the bucket at `key`, for a reserve given up on (decision 353):
-- its TAT moves back by one request at the bucket's limit (60000 units: whole ms and a part),
-- its expiry kept (a TAT behind now reads as a full bucket). A bucket gone is full already.
local function rate_give_back(key)
  local stored = redis.call('GET', key)
  if not stored then return false end
  local tat_ms, part, limit = string.match(stored, '^(%d+):(%d+):(%d+)$')
  if not tat_ms then return false end
  tat_ms, part, limit = tonumber(tat_ms), tonumber(part), tonumber(limit)
  local back_part = RATE_WINDOW_MS % limit
  tat_ms = tat_ms - (RATE_WINDOW_MS - back_part) / limit
  part = part - back_part
  if part < 0 then
    part = part + limit
    tat_ms = tat_ms - 1
  end
  redis.call('SET', key, string.format('%.0f:%.0f:%.0f', tat_ms, part, limit), 'KEEPTTL')
  return true
end
