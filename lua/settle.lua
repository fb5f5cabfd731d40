-- settle: once per request, release its holds, charge the actual cost to every account it
-- touched (base allowance first, then credits, earliest-expiring grant first), and append the
-- usage record to the org's usage stream — all in one atomic step.
--
-- KEYS[1]  wallet             hash { balance, reserved }
-- KEYS[2]  wallet_expiries    zset '<request_id>:<amount>' -> hold expiry (ms)
-- KEYS[3]  org_cap            hash { spent, reserved } for the current period
-- KEYS[4]  org_cap_expiries
-- KEYS[5]  conn_cap           hash { spent, reserved } for the current period
-- KEYS[6]  conn_cap_expiries
-- KEYS[7]  user_spend         hash { spent, reserved } for the user's period
-- KEYS[8]  user_spend_expiries
-- KEYS[9]  user_credits       hash { loaded, g:<grant_id> -> remaining, draining, and for each
--                             draining grant holds:<id>, until:<id> (credits-change.lua) },
--                             settlement currency
-- KEYS[10] user_grants        zset grant_id -> expiry (ms)
-- KEYS[11] settled_marker     string, exists once the request is settled
-- KEYS[12] usage_stream       stream of usage records
-- KEYS[13] in_flight          hash request_id -> draft (reserve.lua): this request's is removed
-- KEYS[14] rebuilds           hash account key -> what settles did not charge that account
--                             while it was missing and being rebuilt (account-rebuild.lua)
-- KEYS[15] draining_for       hash request_id -> the revoked grants that keep money for it
--
-- ARGV[1] request_id
-- ARGV[2] cost_nano           the request's sell cost (caps and allowance)
-- ARGV[3] wallet_cost_nano    charged to the wallet ('0' when it did not pay)
-- ARGV[4] held_nano           the amount of each of the request's holds (as reserved)
-- ARGV[5] marker_ttl_s
-- ARGV[6] now_ms              which grants are live, for a request that has no hold on the
--                             user's account (below)
-- ARGV[7] user_cap_nano       '' when the user has no cap
-- ARGV[8] user_mode           'none' | 'enforce' | 'track_only' | 'disabled'
-- ARGV[9] uses_org_cap        '1' | '0': the org has a cap (the request may hold on org_cap)
-- ARGV[10] uses_conn_cap      '1' | '0'
-- ARGV[11] org_cap_nano       the org cap ('' when none): its threshold marks
-- ARGV[12] conn_cap_nano      the connection cap ('' when none)
-- ARGV[13] user_period        the user account's period key ('' when no user)
-- ARGV[14] cap_period         the caps' period key ('' when no cap)
-- ARGV[15] admitted_ms        when the request was admitted (its record's date, ms)
-- ARGV[16..] record_fields    the usage record as field, value, field, value, ...
--
-- Returns {0, stream_entry_id, credits_cost_nano} when settled now, {1} when settled before.
--
-- Webhook facts ride along in the record, at no extra cost: `threshold_crossings` when this
-- charge took an account past 80% or 100% of its cap (scope:mark:spent_after:cap:period, comma
-- separated; scope user, org or conn) and `wallet_balance_after` when the wallet paid. Each
-- charge is atomic, so exactly one settle crosses each mark of an account in a period.
-- A hold that already lapsed is simply gone: the cost is still charged and recorded.
-- Credits: the grants that were live when the request was admitted (earliest expiry first,
-- also one that has expired since), then what revoked grants kept for the requests in flight
-- when they were revoked (`draining`, credits-change.lua): a revoked grant pays only the
-- requests its revocation found holding (`draining_for` names them), until the last of their
-- holds lapses, and what it kept goes once they have all settled or that time has passed
-- (decision 406). The grants live at admission pay a request that still holds on the
-- user's account (held only under `enforce`; a running request's hold is kept from lapsing,
-- decision 498); one whose hold has lapsed, or under `track_only`, is paid by the grants live
-- now (docs/decisions.md, 288).
-- Accounts missing from Redis are not charged here: they are rebuilt from Postgres, where
-- this record will be counted. While one is being rebuilt (its key is a field of `rebuilds`),
-- what it would have been charged is added to that field, for the rebuild to install. Holds are where reserve.lua put them: the wallet (when it
-- paid), the caps in use, and the user's account when its allowance is enforced.
-- A cap account is charged whenever it exists, also with no cap set at that level (KEYS[3]
-- and KEYS[5] then name the account of the calendar month the request settles in): a cap
-- cleared and set again in the same month finds its account current, as a user's account is
-- (docs/decisions.md, 271).
--
-- Two phases. First everything is read and validated and every change is worked out; an
-- error there leaves Redis untouched, so a retry settles for real. Then the idempotency
-- marker is set (the first write: once a script has written, Redis lets it finish even at
-- maxmemory) and the changes are applied; none of them can fail, as every amount is in range.
--#include amounts
--#include release-hold
--#include credits-available

local request_id, marker_ttl, now_ms, user_mode = ARGV[1], ARGV[5], ARGV[6], ARGV[8]
local admitted_at = integer(ARGV[15], 'admitted_ms')
local cost = amount(ARGV[2], 'cost_nano')
local wallet_cost = amount(ARGV[3], 'wallet_cost_nano')
amount(ARGV[4], 'held_nano')
integer(marker_ttl, 'marker_ttl_s')
local now = integer(now_ms, 'now_ms')
local user_cap = optional_amount(ARGV[7], 'user_cap_nano')
one_of(user_mode, 'user_mode', {'none', 'enforce', 'track_only', 'disabled'})
local uses_org_cap = one_of(ARGV[9], 'uses_org_cap', {'1', '0'}) == '1'
local uses_conn_cap = one_of(ARGV[10], 'uses_conn_cap', {'1', '0'}) == '1'
local org_cap = optional_amount(ARGV[11], 'org_cap_nano')
local conn_cap = optional_amount(ARGV[12], 'conn_cap_nano')
local user_period, cap_period = ARGV[13], ARGV[14]
if user_period ~= '' then integer(user_period, 'user_period') end
if cap_period ~= '' then integer(cap_period, 'cap_period') end
if #ARGV < 17 or (#ARGV - 15) % 2 ~= 0 then
  error('gw_invalid_argument: record_fields must come as one or more field, value pairs')
end
local has_user = user_mode ~= 'none'
local hold_member = request_id .. ':' .. ARGV[4]

if redis.call('EXISTS', KEYS[11]) == 1 then
  redis.call('HDEL', KEYS[13], request_id)
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
-- The cap accounts of levels without a cap: one EXISTS for both (most orgs have neither), a
-- second look only when one of them is there.
local uncapped = {}
if not uses_org_cap then uncapped[#uncapped + 1] = 3 end
if not uses_conn_cap then uncapped[#uncapped + 1] = 5 end
local uncapped_exist = {}
if #uncapped > 0 then
  local names = {}
  for position, index in ipairs(uncapped) do names[position] = KEYS[index] end
  local found = redis.call('EXISTS', unpack(names))
  for _, index in ipairs(uncapped) do
    uncapped_exist[index] = found == #uncapped or
      (found > 0 and redis.call('EXISTS', KEYS[index]) == 1)
  end
end

-- The revoked grants that keep money for this request (credits-change.lua), read once.
local kept_for
local function kept_for_request()
  if kept_for == nil then kept_for = redis.call('HGET', KEYS[15], request_id) or '' end
  return kept_for
end
-- What the user's credits hash says of a revoked grant (its remaining amount, the revocation
-- mark, the count of requests it keeps money for and the time that ends), read once per
-- settle: the charge reads it to decide who pays, the count-down after the writes reuses it.
local revoked_read = {}
local function revoked_state(grant_id)
  local state = revoked_read[grant_id]
  if state == nil then
    state = redis.call('HMGET', KEYS[9], 'g:' .. grant_id, 'revoked:' .. grant_id,
      'holds:' .. grant_id, 'until:' .. grant_id)
    revoked_read[grant_id] = state
  end
  return state
end
local function listed_in(list, grant_id)
  return string.find(',' .. list .. ',', ',' .. grant_id .. ',', 1, true) ~= nil
end

-- Credits pay what the base allowance cannot. Worked out from the spend before this charge;
-- the grants' remaining amounts and their sum are validated as they are read.
local consumed, taken, exhausted = {}, {}, {}
-- The revoked grants' list as the charge read it (false: none), and what each grant it took
-- from has left.
local draining_read
local remaining_after = {}
local credits_cost = 0
local user_exists = has_user and exists(7)
if user_exists and user_mode ~= 'disabled' and user_cap then
  local spent_before = stored_amount(redis.call('HGET', KEYS[7], 'spent'), 'user spent')
  local needed = math.max(0, cost - math.max(0, user_cap - spent_before))
  local credits_state = needed > 0 and redis.call('HMGET', KEYS[9], 'loaded', 'draining') or {}
  if needed > 0 then draining_read = credits_state[2] or false end
  if credits_state[1] then
    -- The grants live at the request's admission first, as they would have paid had it
    -- settled then: one that expired since pays what its requests in flight hold, and never
    -- a request admitted after its expiry. Then what revoked grants kept for the requests in
    -- flight (credits-change.lua): a revoked grant pays only what nothing else can.
    local admitted_ms = now_ms
    if user_mode == 'enforce' and admitted_at < now and
        redis.call('ZSCORE', KEYS[8], hold_member) then
      admitted_ms = ARGV[15]
    end
    local listed = live_credits(KEYS[9], KEYS[10], admitted_ms)
    local live_count = #listed
    -- A revoked grant pays only the requests it kept money for (decision 406). One revoked by
    -- an older version (no `holds:` count) pays those admitted by its revocation's time (399;
    -- a mark of '1', older still, pays any).
    local admitted = tonumber(admitted_ms)
    for grant_id in string.gmatch(credits_state[2] or '', '[^,]+') do
      local kept = revoked_state(grant_id)
      local pays
      if kept[3] then
        pays = now <= tonumber(kept[4]) and listed_in(kept_for_request(), grant_id)
      else
        local revoked_ms = kept[2] ~= '1' and tonumber(kept[2] or '') or nil
        pays = not revoked_ms or admitted <= revoked_ms
      end
      if pays then
        listed[#listed + 1] = {grant_id, stored_amount(kept[1], 'credit ' .. grant_id)}
      end
    end
    for position, grant in ipairs(listed) do
      if needed <= 0 then break end
      local take = math.min(grant[2], needed)
      if take > 0 then
        local take_text = string.format('%.0f', take)
        taken[#taken + 1] = {'g:' .. grant[1], '-' .. take_text}
        -- A live grant this empties leaves the grants zset, which every reserve and settle
        -- walks; its field stays at 0, so a reload does not bring it back (credits-load.lua).
        if position <= live_count and take == grant[2] then exhausted[#exhausted + 1] = grant[1] end
        remaining_after[grant[1]] = grant[2] - take
        consumed[#consumed + 1] = grant[1] .. ':' .. take_text
        credits_cost = credits_cost + take
        needed = needed - take
      end
    end
  end
end

-- Writes from here on.
redis.call('SET', KEYS[11], '1', 'EX', marker_ttl)
redis.call('HDEL', KEYS[13], request_id)

-- Releases the request's hold on the account at KEYS[index] (when it may hold one there) and
-- adds `delta` to `field`, when the account is in Redis (else it is not charged). Returns the
-- field's new value when it changed.
-- An account that is missing is being rebuilt when `rebuilds` lists it: what this settle
-- would have charged it goes there (one EXISTS per settle that meets a missing account).
local rebuilding
local function note_missed(index, delta)
  if delta == 0 then return end
  if rebuilding == nil then rebuilding = redis.call('EXISTS', KEYS[14]) == 1 end
  if rebuilding and redis.call('HEXISTS', KEYS[14], KEYS[index]) == 1 then
    redis.call('HINCRBY', KEYS[14], KEYS[index], string.format('%.0f', delta))
  end
end

local function release_and_charge(index, field, delta, may_hold)
  if not exists(index) then
    note_missed(index, delta)
    return nil
  end
  if may_hold then release_hold(KEYS[index], KEYS[index + 1], hold_member) end
  if delta == 0 then return nil end
  return redis.call('HINCRBY', KEYS[index], field, string.format('%.0f', delta))
end

-- 80% of a cap, rounded up, in exact steps (cap * 4 < 2^53 for any cap below 2^51).
local function eighty_percent(cap)
  local scaled = cap * 4
  local rest = scaled % 5
  return (scaled - rest) / 5 + (rest > 0 and 1 or 0)
end

-- Notes each mark of `cap` that this charge of `delta` took the account past.
local crossings = {}
local function note_crossings(scope, spent_after, delta, cap, period)
  if spent_after == nil or cap == nil or cap <= 0 then return end
  local spent_before = spent_after - delta
  for _, mark in ipairs({{'0.8', eighty_percent(cap)}, {'1.0', cap}}) do
    if spent_before < mark[2] and spent_after >= mark[2] then
      crossings[#crossings + 1] = scope .. ':' .. mark[1] .. ':' .. string.format('%.0f', spent_after)
        .. ':' .. string.format('%.0f', cap) .. ':' .. period
    end
  end
end

-- The wallet may hold (system route) or not (a BYOK credential paid): always released.
local wallet_after = release_and_charge(1, 'balance', -wallet_cost, true)
if uses_org_cap then
  note_crossings('org', release_and_charge(3, 'spent', cost, true), cost, org_cap, cap_period)
end
if uses_conn_cap then
  note_crossings('conn', release_and_charge(5, 'spent', cost, true), cost, conn_cap, cap_period)
end
for _, index in ipairs(uncapped) do
  if uncapped_exist[index] then
    if cost > 0 then redis.call('HINCRBY', KEYS[index], 'spent', ARGV[2]) end
  else
    note_missed(index, cost)
  end
end
if user_exists then
  local user_after = release_and_charge(7, 'spent', cost, user_mode == 'enforce' and user_cap ~= nil)
  note_crossings('user', user_after, cost, user_cap, user_period)
elseif has_user then
  note_missed(7, cost)
end
for _, change in ipairs(taken) do
  redis.call('HINCRBY', KEYS[9], change[1], change[2])
end
for _, grant_id in ipairs(exhausted) do
  redis.call('ZREM', KEYS[10], grant_id)
end
-- This request no longer counts for the revoked grants that kept money for it; what one kept
-- goes once it is spent, every request it kept it for has settled, or the last of their holds
-- has lapsed (decision 406). One revoked by an older version goes once the user's account
-- holds nothing.
if user_exists and user_mode == 'enforce' and user_cap then
  local draining = draining_read
  if draining == nil then draining = redis.call('HGET', KEYS[9], 'draining') end
  if draining then
    local mine = kept_for_request()
    if mine ~= '' then redis.call('HDEL', KEYS[15], request_id) end
    local left, dropped = {}, false
    for grant_id in string.gmatch(draining, '[^,]+') do
      local state = revoked_state(grant_id)
      local drop
      if state[3] then
        local holds = tonumber(state[3])
        if listed_in(mine, grant_id) then
          holds = redis.call('HINCRBY', KEYS[9], 'holds:' .. grant_id, -1)
        end
        local remaining = remaining_after[grant_id]
        local spent
        if remaining ~= nil then spent = remaining == 0 else spent = state[1] == '0' end
        drop = holds <= 0 or now > (tonumber(state[4]) or 0) or spent
      else
        drop = tonumber(redis.call('HGET', KEYS[7], 'reserved') or '0') == 0
      end
      if drop then
        redis.call('HDEL', KEYS[9], 'g:' .. grant_id, 'holds:' .. grant_id, 'until:' .. grant_id)
        dropped = true
      else
        left[#left + 1] = grant_id
      end
    end
    if #left == 0 then
      redis.call('HDEL', KEYS[9], 'draining')
    elseif dropped then
      redis.call('HSET', KEYS[9], 'draining', table.concat(left, ','))
    end
  end
end

local record = {}
for index = 16, #ARGV do
  record[#record + 1] = ARGV[index]
end
local credits_cost_text = string.format('%.0f', credits_cost)
record[#record + 1] = 'credits_cost_nano'
record[#record + 1] = credits_cost_text
record[#record + 1] = 'credit_consumption'
record[#record + 1] = table.concat(consumed, ',')
if #crossings > 0 then
  record[#record + 1] = 'threshold_crossings'
  record[#record + 1] = table.concat(crossings, ',')
end
if wallet_after ~= nil then
  record[#record + 1] = 'wallet_balance_after'
  record[#record + 1] = string.format('%.0f', wallet_after)
end
local entry_id = redis.call('XADD', KEYS[12], '*', unpack(record))
return {0, entry_id, credits_cost_text}
