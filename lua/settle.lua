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
-- ARGV[4] marker_ttl_s
-- ARGV[5] now_ms
-- ARGV[6] user_cap_nano      '' when the user has no cap
-- ARGV[7] user_mode          'none' | 'enforce' | 'track_only' | 'disabled'
-- ARGV[8] uses_org_cap       '1' | '0'
-- ARGV[9] uses_conn_cap      '1' | '0'
-- ARGV[10..] the usage record as field, value, field, value, ...
--
-- Returns {0, stream_entry_id, credits_cost_nano} when settled now, {1} when settled before.
-- A hold that already lapsed is simply gone: the cost is still charged and recorded.
-- Accounts missing from Redis are not charged here: they are rebuilt from Postgres, where
-- this record will be counted.
--#include release-hold

local request_id, cost, wallet_cost, marker_ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now_ms, user_cap, user_mode = ARGV[5], ARGV[6], ARGV[7]
local uses_org_cap, uses_conn_cap = ARGV[8] == '1', ARGV[9] == '1'

if redis.call('EXISTS', KEYS[11]) == 1 then
  return {1}
end

-- Releases the request's hold on the account at KEYS[index] and adds `delta` to `field`;
-- returns the field's new value, or nil when the account is not in Redis (not charged).
local function release_and_charge(index, field, delta)
  local held = release_hold(KEYS[index], KEYS[index + 1], request_id)
  if delta == '0' or delta == '-0' then return nil end
  if held or redis.call('EXISTS', KEYS[index]) == 1 then
    return redis.call('HINCRBY', KEYS[index], field, delta)
  end
  return nil
end

-- The wallet may hold (system route) or not (a BYOK credential paid): always released.
release_and_charge(1, 'balance', '-' .. wallet_cost)
if uses_org_cap then release_and_charge(3, 'spent', cost) end
if uses_conn_cap then release_and_charge(5, 'spent', cost) end

-- Credits pay what the base allowance cannot: these are per-user amounts far below 2^53
-- nano-units, so the arithmetic below is exact in Lua numbers.
local consumed = {}
local credits_cost = 0
if user_mode ~= 'none' then
  local spent_after = release_and_charge(7, 'spent', cost)
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
for index = 10, #ARGV do
  record[#record + 1] = ARGV[index]
end
local credits_cost_text = string.format('%.0f', credits_cost)
record[#record + 1] = 'credits_cost_nano'
record[#record + 1] = credits_cost_text
record[#record + 1] = 'credit_consumption'
record[#record + 1] = table.concat(consumed, ',')
local entry_id = redis.call('XADD', KEYS[12], '*', unpack(record))
redis.call('SET', KEYS[11], '1', 'EX', marker_ttl)
return {0, entry_id, credits_cost_text}
