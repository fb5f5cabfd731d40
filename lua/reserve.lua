-- reserve: one atomic check-and-hold over every account a request touches: the org cap, the
-- app-connection cap, the product user's allowance (base cap + credits) and the paying wallet.
-- Either every hold is placed or none is.
--
-- KEYS[1]  wallet             hash { balance, reserved }
-- KEYS[2]  wallet_expiries    zset '<request_id>:<amount>' -> hold expiry (ms)
-- KEYS[3]  org_cap            hash { spent, reserved } for the current period
-- KEYS[4]  org_cap_expiries
-- KEYS[5]  conn_cap           hash { spent, reserved } for the current period
-- KEYS[6]  conn_cap_expiries
-- KEYS[7]  user_spend         hash { spent, reserved } for the user's period
-- KEYS[8]  user_spend_expiries
-- KEYS[9]  user_credits       hash { loaded, g:<grant_id> -> remaining }
-- KEYS[10] user_grants        zset grant_id -> expiry (ms)
-- KEYS[11] cred_cooldowns     hash credential_id -> cooling down until (ms)
-- KEYS[12] cred_rotation      hash tier -> rotation counter
-- KEYS[13] in_flight          hash request_id -> '<credential_id>\n<draft>': the org's requests
--                             held and not yet settled (see ARGV[12])
-- KEYS[14] key_rate           string: the API key's request-rate bucket (rate-take.lua)
-- KEYS[15] user_rate          string: the bucket of the product user under this API key
-- KEYS[16] previous_spend     hash { spent, reserved }: the user's account of the period before
--                             (a request admitted before the period turned holds there until it
--                             settles, and its settle draws on the same credits)
-- KEYS[17] previous_spend_expiries
--
-- ARGV[1] request_id
-- ARGV[2] amount_nano         the worst-case cost to hold
-- ARGV[3] now_ms
-- ARGV[4] expires_at_ms       when the holds lapse if never settled (crashed instance)
-- ARGV[5] wallet_pays         '1' | '0'
-- ARGV[6] org_cap_nano        '' when the org has no cap
-- ARGV[7] conn_cap_nano       '' when the connection has no cap
-- ARGV[8] user_cap_nano       '' when the user has no cap (unlimited base allowance)
-- ARGV[9] user_mode           'none' (no product user) | 'enforce' | 'track_only' | 'disabled'
-- ARGV[10] credentials        eligible BYOK credentials by priority tier: 'id1,id2|id3' ('' none)
-- ARGV[11] byok_only          '1' when the system route must not serve if no credential can
-- ARGV[12] draft              the settle to run if this request's instance dies before it
--                             settles ('' : none); kept in in_flight with the credential picked,
--                             removed by settle.lua
-- ARGV[13] key_rpm            the API key's requests per minute ('' : no limit)
-- ARGV[14] user_rpm           each product user's requests per minute under this key ('' : no
--                             limit; ignored without a product user)
--
-- A picked credential pays the vendor, so the org wallet is then not held. The user's account
-- is held only when its allowance is enforced against a cap (nothing else reads its holds);
-- its credits must be loaded only when they may pay (a cap, and a mode other than disabled).
-- Returns {code, ...}:
--   {0, credential_id[, limit, remaining, reset_ms]}
--                                         held ('' : the system route serves); with a rate
--                                         limit, the tighter bucket's limit, the requests it
--                                         still passes now and the ms until it is full again
--   {1, name, ...}                        accounts to load from Postgres first
--                                         (names: wallet, org_cap, conn_cap, user)
--   {2, available}                        the wallet cannot cover amount_nano
--   {3, scope, cap, spent, reserved}      a cap blocks it (scope: org | app_connection)
--   {4, cap, spent, base_remaining, credits, available}
--                                         the user's allowance cannot cover it (enforce)
--   {5, cooling_until_ms}                 byok_only and every credential is cooling down
--                                         (until the first of them stops, ms)
--   {6, scope, limit, retry_after_ms, reset_ms}
--                                         a request-rate limit is reached (scope: key |
--                                         product_user; the longer wait when both are), and
--                                         the ms until that bucket is full again
-- The rate limits are checked first, before any account is read, and an arrival is recorded
-- only when the request is held (code 0): a request refused for money, or told to load its
-- accounts first and sent again, does not use up its rate; and once per request (a request
-- already in in_flight is not counted again). Without a limit they cost no call; with one, a
-- GET per bucket and the HEXISTS on in_flight.
-- Every argument and every amount read is validated (includes/amounts.lua) before the first
-- write that could leave a partial change: a script that errors writes nothing but the
-- sweep of lapsed holds and the credential rotation counter, both complete on their own.
-- Amounts are compared as exact Lua numbers; every change is HINCRBY. Nothing is held on
-- failure.
-- Credits are the user's across periods: the holds left on the period before's account, past
-- what its base allowance (at today's cap) covers, will draw on them too, so they are not
-- counted as available again (read only when credits are summed).
-- Each account is read once (HMGET of its value and its holds; a missing value means the
-- account is not in Redis yet) and read again only if lapsed holds were swept from it.
-- Redis charges every redis.call (~1-2 µs each): keep their number down on this hot path.
--#include amounts
--#include sweep-expired
--#include hold
--#include credits-available
--#include pick-credential
--#include rate-take

local request_id, amount_text, now_ms, expires_at_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local wallet_pays, org_cap, conn_cap, user_cap, user_mode = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local credentials, byok_only, draft = ARGV[10], ARGV[11], ARGV[12]
local need = amount(amount_text, 'amount_nano')
integer(now_ms, 'now_ms')
integer(expires_at_ms, 'expires_at_ms')
one_of(wallet_pays, 'wallet_pays', {'1', '0'})
one_of(byok_only, 'byok_only', {'1', '0'})
one_of(user_mode, 'user_mode', {'none', 'enforce', 'track_only', 'disabled'})
local org_cap_value = optional_amount(org_cap, 'org_cap_nano')
local conn_cap_value = optional_amount(conn_cap, 'conn_cap_nano')
local user_cap_value = optional_amount(user_cap, 'user_cap_nano')
local has_user = user_mode ~= 'none'
local user_enforced = user_mode == 'enforce' and user_cap ~= ''
local user_credits_may_pay = has_user and user_mode ~= 'disabled' and user_cap ~= ''
local key_rpm = rate_limit(ARGV[13], 'key_rpm')
local user_rpm = rate_limit(ARGV[14], 'user_rpm')
if not has_user then user_rpm = nil end

local function fmt(value)
  return string.format('%.0f', value)
end

-- {value, reserved} of an account the request uses (nil for one it does not use), each
-- validated; value nil when the account is not in Redis.
local function read_account(used, account, field)
  if not used then return nil end
  local state = redis.call('HMGET', account, field, 'reserved')
  if state[1] then
    state[1] = stored_amount(state[1], account .. ' ' .. field)
    state[2] = stored_amount(state[2], account .. ' reserved')
  end
  return state
end
-- The rate buckets this request passes, to record if it is held: {key, tat, expiry_ms}.
local rate_taken = {}
-- What the client is told of its rate (decision 353): {limit, remaining, reset_ms} of the
-- tighter bucket (fewer requests left; on a tie, the later to be full again).
local rate_shown
local function show_rate(limit, debt)
  local remaining, reset_ms = rate_left(debt, limit)
  if not rate_shown or remaining < rate_shown[2] or
      (remaining == rate_shown[2] and reset_ms > rate_shown[3]) then
    rate_shown = {limit, remaining, reset_ms}
  end
end
if key_rpm or user_rpm then
  local now = tonumber(now_ms)
  -- A reserve of a request it already held (run again: decision 318) neither counts it again
  -- nor refuses it for its own arrival: its draft in in_flight says it ran (decision 353).
  local counted = draft ~= '' and redis.call('HEXISTS', KEYS[13], request_id) == 1
  local refusal
  for _, rate in ipairs({{key_rpm, 14, 'key'}, {user_rpm, 15, 'product_user'}}) do
    if rate[1] and counted then
      show_rate(rate[1], rate_debt(KEYS[rate[2]], rate[1], now))
    elseif rate[1] then
      -- passing: the TAT, its expiry, the debt after it; refused: the wait, the debt found
      local passes, tat_or_wait, expiry_or_debt, after = rate_take(KEYS[rate[2]], rate[1], now)
      if passes then
        rate_taken[#rate_taken + 1] = {KEYS[rate[2]], tat_or_wait, expiry_or_debt}
        show_rate(rate[1], after)
      elseif not refusal or tat_or_wait > refusal[4] then
        local _, reset_ms = rate_left(expiry_or_debt, rate[1])
        refusal = {6, rate[3], rate[1], tat_or_wait, reset_ms}
      end
    end
  end
  if refusal then return refusal end
end

local wallet_state = read_account(wallet_pays == '1', KEYS[1], 'balance')
local org_state = read_account(org_cap ~= '', KEYS[3], 'spent')
local conn_state = read_account(conn_cap ~= '', KEYS[5], 'spent')
local user_state = read_account(has_user, KEYS[7], 'spent')

local missing = {}
if wallet_state and not wallet_state[1] then missing[#missing + 1] = 'wallet' end
if org_state and not org_state[1] then missing[#missing + 1] = 'org_cap' end
if conn_state and not conn_state[1] then missing[#missing + 1] = 'conn_cap' end
if user_state and (not user_state[1] or
    (user_credits_may_pay and redis.call('HEXISTS', KEYS[9], 'loaded') == 0)) then
  missing[#missing + 1] = 'user'
end
if #missing > 0 then
  return {1, unpack(missing)}
end

local credential, cooling_until = pick_credential(KEYS[11], KEYS[12], credentials, now_ms)
if credential then
  wallet_pays = '0'
elseif credentials ~= '' and byok_only == '1' then
  return {5, cooling_until}
end

-- value, reserved of an account, after releasing its lapsed holds (crashed instances'). A
-- sweep only lowers `reserved`, so the values read again are as valid as the first ones.
local function current(account, expiries, state, field)
  if sweep_expired(account, expiries, now_ms, 20) > 0 then
    local swept = redis.call('HMGET', account, field, 'reserved')
    return tonumber(swept[1]), tonumber(swept[2] or '0')
  end
  return state[1], state[2]
end

-- What this request already holds on an account, counted in its `reserved`: a reserve that
-- runs twice (sent again on a new connection, having run on the old one: decision 318) must
-- not be refused for its own first hold, which hold() then keeps as it is. Looked at only
-- when a check fails (one call fewer on the hot path).
local member = request_id .. ':' .. amount_text
local function own_hold(expiries)
  if redis.call('ZSCORE', expiries, member) then return need end
  return 0
end

for _, cap in ipairs({{org_cap_value, 3, 'org', org_state}, {conn_cap_value, 5, 'app_connection', conn_state}}) do
  if cap[1] then
    local spent, reserved = current(KEYS[cap[2]], KEYS[cap[2] + 1], cap[4], 'spent')
    if spent + reserved + need > cap[1] then
      reserved = reserved - own_hold(KEYS[cap[2] + 1])
      if spent + reserved + need > cap[1] then
        return {3, cap[3], fmt(cap[1]), fmt(spent), fmt(reserved)}
      end
    end
  end
end

-- What the holds on the user's account of the period before will take from the credits: their
-- sum past that period's base allowance left (its lapsed holds released first).
local function earlier_credits_held()
  local state = read_account(true, KEYS[16], 'spent')
  if not state or not state[1] or state[2] == 0 then return 0 end
  local spent, reserved = current(KEYS[16], KEYS[17], state, 'spent')
  return math.max(0, reserved - math.max(0, user_cap_value - spent))
end

if user_enforced then
  local spent, reserved = current(KEYS[7], KEYS[8], user_state, 'spent')
  local base_remaining = math.max(0, user_cap_value - spent)
  if need > base_remaining - reserved then reserved = reserved - own_hold(KEYS[8]) end
  -- Credits are summed only when the base allowance alone cannot cover the request.
  if need > base_remaining - reserved then
    local _, credits = live_credits(KEYS[9], KEYS[10], now_ms)
    local available = math.max(0, base_remaining + credits - reserved - earlier_credits_held())
    if need > available then
      return {4, user_cap, fmt(spent), fmt(base_remaining), fmt(credits), fmt(available)}
    end
  end
end

if wallet_pays == '1' then
  local balance, reserved = current(KEYS[1], KEYS[2], wallet_state, 'balance')
  local available = balance - reserved
  if available < need then available = available + own_hold(KEYS[2]) end
  if available < need then
    return {2, fmt(math.max(available, 0))}
  end
  hold(KEYS[1], KEYS[2], request_id, amount_text, expires_at_ms)
end
if org_cap_value then hold(KEYS[3], KEYS[4], request_id, amount_text, expires_at_ms) end
if conn_cap_value then hold(KEYS[5], KEYS[6], request_id, amount_text, expires_at_ms) end
if user_enforced then hold(KEYS[7], KEYS[8], request_id, amount_text, expires_at_ms) end
if draft ~= '' then redis.call('HSET', KEYS[13], request_id, (credential or '') .. '\n' .. draft) end
for _, taken in ipairs(rate_taken) do redis.call('SET', taken[1], taken[2], 'PX', taken[3]) end
if rate_shown then return {0, credential or '', rate_shown[1], rate_shown[2], rate_shown[3]} end
return {0, credential or ''}
