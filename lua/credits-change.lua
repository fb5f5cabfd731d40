-- credits-change: applies a new grant or a revocation to a user's live credits in one
-- currency.
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> -> when
--                        it was revoked (ms), draining -> 'id1,id2', holds:<grant_id> -> how
--                        many of the requests it keeps money for have not settled,
--                        until:<grant_id> -> when the last of their holds lapses (ms) }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- KEYS[3] user_spend     (remove) the user's account of the current period
-- KEYS[4] user_spend_expiries  its holds, the user's requests in flight
-- KEYS[5] previous_spend (remove) the user's account of the period before: a request admitted
--                        before the period turned holds there until it settles
-- KEYS[6] previous_spend_expiries  its holds
-- KEYS[7] draining_for   hash request_id -> the revoked grants that keep money for it
--                        (comma separated): the requests the revocation found in flight
-- KEYS[8] next_spend     (remove) the user's account of the period after: where the gateways
--                        hold once the period has turned by their clocks and not yet by the
--                        revoking process's, a clock behind theirs (decision 565)
-- KEYS[9] next_spend_expiries  its holds
-- ARGV[1] action         'add' | 'add_missing' | 'remove'
-- ARGV[2] grant_id
-- ARGV[3] amount_nano    (add) the grant's amount
-- ARGV[4] expires_at_ms  (add) its expiry
-- ARGV[5] ttl_ms         how long a revocation is remembered when the credits are not loaded
-- ARGV[6] keep_held      (remove) '1' when the grant's credits may pay the user's requests in
--                        flight (settlement currency), else '0'
--
-- Returns 1 when something changed. A grant added before the user's credits are loaded is
-- kept; credits-load merges the rest around it. `add_missing` is a grant recorded before
-- whose `add` may not have run (a retry after Redis failed, decision 499): it is added only
-- to loaded credits that have no field for it, which then never had it (a load, which reads
-- what the ledger says is left, brings it to credits not loaded), so what was spent of it is
-- never given back. A grant that has expired is not sent (a load leaves it out: its field may
-- be missing after it was spent, decision 530). A revoked grant leaves a `revoked:<id>` mark
-- that credits-load honours: a load that read Postgres before the revocation cannot bring the
-- grant back; a revocation of a grant revoked already changes nothing (0). An amount out of
-- range is refused with nothing written.
--
-- A revocation takes what is neither spent nor held (docs/charging.md, "Credits revoked in
-- flight"): while the user's requests in flight hold money, the grant keeps up to what they
-- hold, out of `user_grants` (no new request counts it) and listed in `draining`. It keeps it
-- for exactly those requests, the holds listed on the user's accounts now (decision 406):
-- each is named in `draining_for`, `holds:<id>` counts them and `until:<id>` is when the last
-- of their holds lapses. settle.lua lets the grant pay what the base allowance and the live
-- credits cannot for those requests only, and drops what is left of it once they have all
-- settled or `until` has passed (those released or abandoned never settle). No clock is
-- compared: a reserve that ran before this script is counted, one after it is not.
--
-- Nor is a hold judged by the revoking process's clock (decision 562): that process (the
-- operator's CLI on any host, a gateway) is not one of the clocks the holds are stamped by,
-- and one ahead by more than the time left before a running request's next renewal released
-- its live holds, so the grant kept nothing for it. The script's time is Redis's own (`TIME`),
-- one server clock kept in sync as the gateways' are (docs/limits.md): a hold lapsed by it is
-- not counted, and none is released here (the gateways' reserves release lapsed holds, as
-- before). The same time dates the mark and sets how long `draining_for` lives (which Redis
-- counts by that clock).
--#include amounts

one_of(ARGV[1], 'action', {'add', 'add_missing', 'remove'})
if ARGV[1] ~= 'remove' then
  amount(ARGV[3], 'amount_nano')
  integer(ARGV[4], 'expires_at_ms')
  if redis.call('HEXISTS', KEYS[1], 'revoked:' .. ARGV[2]) == 1 then
    return 0
  end
  if ARGV[1] == 'add_missing' and (redis.call('HEXISTS', KEYS[1], 'loaded') == 0 or
      redis.call('HEXISTS', KEYS[1], 'g:' .. ARGV[2]) == 1) then
    return 0
  end
  local added = redis.call('HSETNX', KEYS[1], 'g:' .. ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
  return added
end
integer(ARGV[5], 'ttl_ms')
one_of(ARGV[6], 'keep_held', {'1', '0'})
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local field = 'g:' .. ARGV[2]
-- Revoked already (the same revocation run again: a client resends a command whose answer it
-- lost): nothing changes. Counted again, the holds admitted since would be named as kept for
-- and the grant listed twice in `draining`, paying each request it pays twice (decision 448).
if redis.call('HEXISTS', KEYS[1], 'revoked:' .. ARGV[2]) == 1 then
  return 0
end

-- The holds listed on one of the user's period accounts (none when it is not in Redis) that
-- have not lapsed by Redis's clock, none released: adds each one's request and amount to
-- `counted`.
local counted = {requests = {}, held = 0, last_lapse = 0}
local function count_holds(account, expiries)
  if redis.call('EXISTS', account) == 0 then return end
  local holds = redis.call('ZRANGEBYSCORE', expiries, '(' .. string.format('%.0f', now_ms), '+inf',
    'WITHSCORES')
  for index = 1, #holds, 2 do
    local request_id, amount_text = string.match(holds[index], '^(.*):(%d+)$')
    if request_id then
      counted.requests[#counted.requests + 1] = request_id
      counted.held = counted.held + stored_amount(amount_text, 'hold ' .. request_id)
      counted.last_lapse = math.max(counted.last_lapse, tonumber(holds[index + 1]))
    end
  end
end

-- What the grant keeps: up to what the user's requests in flight hold (any of it may end up
-- paid by credits), never more than it has left. Those admitted before the period turned hold
-- on the previous period's account (docs/decisions.md, 404); those admitted after a turn the
-- revoking clock has not reached yet, on the next period's (565).
local kept = 0
local remaining_text = redis.call('HGET', KEYS[1], field)
if ARGV[6] == '1' and remaining_text and redis.call('HEXISTS', KEYS[1], 'loaded') == 1 then
  local remaining = stored_amount(remaining_text, 'credit ' .. ARGV[2])
  count_holds(KEYS[3], KEYS[4])
  if KEYS[5] ~= KEYS[3] then count_holds(KEYS[5], KEYS[6]) end
  if KEYS[8] ~= KEYS[3] and KEYS[8] ~= KEYS[5] then count_holds(KEYS[8], KEYS[9]) end
  kept = math.max(0, math.min(remaining, counted.held))
end

redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'revoked:' .. ARGV[2], string.format('%.0f', now_ms))
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
if kept > 0 then
  local last_lapse = string.format('%.0f', counted.last_lapse)
  redis.call('HSET', KEYS[1], field, string.format('%.0f', kept),
    'holds:' .. ARGV[2], #counted.requests, 'until:' .. ARGV[2], last_lapse)
  local draining = redis.call('HGET', KEYS[1], 'draining')
  redis.call('HSET', KEYS[1], 'draining', draining and (draining .. ',' .. ARGV[2]) or ARGV[2])
  for _, request_id in ipairs(counted.requests) do
    local others = redis.call('HGET', KEYS[7], request_id)
    redis.call('HSET', KEYS[7], request_id, others and (others .. ',' .. ARGV[2]) or ARGV[2])
  end
  -- Nothing there is needed once the last of those holds has lapsed (a minute's margin for
  -- the clocks): the requests released or abandoned leave their names to go with the key. A
  -- minute at least, when every hold counted has lapsed already by Redis's clock.
  local needed_ms = math.max(counted.last_lapse - now_ms, 0) + 60000
  if redis.call('PTTL', KEYS[7]) < needed_ms then
    redis.call('PEXPIRE', KEYS[7], string.format('%.0f', needed_ms))
  end
  return 1
end
return redis.call('HDEL', KEYS[1], field)
