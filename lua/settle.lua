-- settle: once per request, release its holds, charge the actual cost to every account it
-- touched (base allowance first, then credits, earliest-expiring grant first), and append the
-- usage record to the org's usage stream — all in one atomic step.
--
-- KEYS[1..10] as in reserve.lua (wallet, org cap, connection cap, user spend, user credits)
-- KEYS[11] settled_marker    string, exists once the request is settled
-- KEYS[12] usage_stream      stream of usage records
--
-- ARGV[1] request_id
-- ARGV[2] cost_nano          the request's sell cost (caps and allowance)
-- ARGV[3] wallet_cost_nano   charged to the wallet ('0' when it did not pay)
-- ARGV[4] held_nano          the amount of each of the request's holds (as reserved)
-- ARGV[5] marker_ttl_s
-- ARGV[6] now_ms
-- ARGV[7] user_cap_nano      '' when the user has no cap
-- ARGV[8] user_mode          'none' | 'enforce' | 'track_only' | 'disabled'
-- ARGV[9] uses_org_cap       '1' | '0'
-- ARGV[10] uses_conn_cap     '1' | '0'
-- ARGV[11..] the usage record as field, value, field, value, ...
--
-- Returns {0, stream_entry_id, credits_cost_nano} when settled now, {1} when settled before.
-- A hold that already lapsed is simply gone: the cost is still charged and recorded.
-- Accounts missing from Redis are not charged here: they are rebuilt from Postgres, where
-- this record will be counted. Holds are where reserve.lua put them: the wallet (when it
-- paid), the caps in use, and the user's account when its allowance is enforced.
--#include release-hold

local request_id, cost, wallet_cost, held = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local marker_ttl, now_ms, user_cap, user_mode = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local uses_org_cap, uses_conn_cap = ARGV[9] == '1', ARGV[10] == '1'
local has_user = user_mode ~= 'none'
local hold_member = request_id .. ':' .. held

-- The marker goes first: a settle that finds it was settled before. (Once a script has
-- written, Redis lets it finish even at maxmemory, so nothing below is refused after it.)
if not redis.call('SET', KEYS[11], '1', 'NX', 'EX', marker_ttl) then
  return {1}
end

-- Every account this settle touches exists in the common case: one EXISTS tells, and each
-- is checked alone only when one of them is missing.
local touched = {KEYS[1]}
if uses_org_cap then touched[#touched + 1] = KEYS[3] end
if uses_conn_cap then touched[#touched + 1] = KEYS[5] end
if has_user then touched[#touched + 1] = KEYS[7] end
local all_exist = redis.call('EXISTS', unpack(touched)) == #touched
local function exists(index)
  return all_exist or redis.call('EXISTS', KEYS[index]) == 1
end

-- Releases the request's hold on the account at KEYS[index] (when it may hold one there) and
-- adds `delta` to `field`; returns the field's new value, or nil when the account is not in
-- Redis (then it is not charged) or the delta is zero.
local function release_and_charge(index, field, delta, may_hold)
  if not exists(index) then return nil end
  if may_hold then release_hold(KEYS[index], KEYS[index + 1], hold_member) end
  if delta == '0' then return nil end
  return redis.call('HINCRBY', KEYS[index], field, delta)
end

-- The wallet may hold (system route) or not (a BYOK credential paid): always released.
release_and_charge(1, 'balance', wallet_cost == '0' and '0' or '-' .. wallet_cost, true)
if uses_org_cap then release_and_charge(3, 'spent', cost, true) end
if uses_conn_cap then release_and_charge(5, 'spent', cost, true) end

-- Credits pay what the base allowance cannot: these are per-user amounts far below 2^53
-- nano-units, so the arithmetic below is exact in Lua numbers.
local consumed = {}
local credits_cost = 0
if has_user then
  local spent_after = release_and_charge(7, 'spent', cost, user_mode == 'enforce' and user_cap ~= '')
  if spent_after and user_mode ~= 'disabled' and user_cap ~= '' then
    local spent_before = spent_after - tonumber(cost)
    local base_remaining = math.max(0, tonumber(user_cap) - spent_before)
    local needed = math.max(0, tonumber(cost) - base_remaining)
    if needed > 0 and redis.call('HEXISTS', KEYS[9], 'loaded') == 1 then
      local live = redis.call('ZRANGEBYSCORE', KEYS[10], '(' .. now_ms, '+inf')
      for _, grant_id in ipairs(live) do
        if needed <= 0 then break end
        local remaining = tonumber(redis.call('HGET', KEYS[9], 'g:' .. grant_id) or '0')
        if remaining > 0 then
          local take = math.min(remaining, needed)
          local take_text = string.format('%.0f', take)
          redis.call('HINCRBY', KEYS[9], 'g:' .. grant_id, '-' .. take_text)
          consumed[#consumed + 1] = grant_id .. ':' .. take_text
          credits_cost = credits_cost + take
          needed = needed - take
        end
      end
    end
  end
end

local record = {}
for index = 11, #ARGV do
  record[#record + 1] = ARGV[index]
end
local credits_cost_text = string.format('%.0f', credits_cost)
record[#record + 1] = 'credits_cost_nano'
record[#record + 1] = credits_cost_text
record[#record + 1] = 'credit_consumption'
record[#record + 1] = table.concat(consumed, ',')
local entry_id = redis.call('XADD', KEYS[12], '*', unpack(record))
return {0, entry_id, credits_cost_text}
