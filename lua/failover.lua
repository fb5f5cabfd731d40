-- failover: a BYOK credential was rate limited or out of quota before any byte reached the
-- client. Cool it down (every instance skips it until then) and pick the next eligible
-- credential; with none left, fall back to the system route, which the org wallet pays: hold
-- the request's amount on the wallet now.
--
-- KEYS[1] wallet             hash { balance, reserved }
-- KEYS[2] wallet_expiries    zset '<request_id>:<amount>' -> hold expiry (ms)
-- KEYS[3] cred_cooldowns     hash credential_id -> cooling down until (ms)
-- KEYS[4] cred_rotation      hash tier -> rotation counter
-- KEYS[5] usage_stream       the org's usage stream (the webhook event goes there)
-- KEYS[6] in_flight          the org's in-flight drafts (reserve.lua): the request's names the
--                            credential now serving it ('' : the system route)
--
-- ARGV[1] request_id
-- ARGV[2] failed_credential_id
-- ARGV[3] cooldown_until_ms
-- ARGV[4] credentials        tiers as in reserve.lua
-- ARGV[5] byok_only          '1' | '0'
-- ARGV[6] amount_nano        the request's hold
-- ARGV[7] now_ms
-- ARGV[8] expires_at_ms
-- ARGV[9] org_id
-- ARGV[10] failure           'rejected' (the vendor refused the key) | 'failed_over'
-- ARGV[11] upstream_status   the vendor's HTTP status
--
-- The call that starts a credential's cooldown (it was not cooling down already) appends a
-- `provider_credential.<failure>` event to the usage stream, which the usage writer turns into
-- a webhook: once per cooldown however many requests fail on the credential at once.
--
-- Returns {0, credential_id} (another credential), {0, ''} (system route, wallet held),
-- {1} wallet not loaded, {2, available} wallet short, {5, cooling_until_ms} byok_only and none
-- left (until the first of them stops cooling down, ms).
-- Every argument is validated before the first write.
--#include amounts
--#include sweep-expired
--#include hold
--#include pick-credential

local request_id, failed, cooldown_until = ARGV[1], ARGV[2], ARGV[3]
local credentials, byok_only, amount_text, now_ms, expires_at_ms = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local need = amount(amount_text, 'amount_nano')
local cooldown_until_value = integer(cooldown_until, 'cooldown_until_ms')
integer(now_ms, 'now_ms')
integer(expires_at_ms, 'expires_at_ms')
one_of(byok_only, 'byok_only', {'1', '0'})
local org_id, failure, upstream_status = ARGV[9], ARGV[10], ARGV[11]
one_of(failure, 'failure', {'rejected', 'failed_over'})
integer(upstream_status, 'upstream_status')

local current = tonumber(redis.call('HGET', KEYS[3], failed) or '0') or 0
if cooldown_until_value > current then
  redis.call('HSET', KEYS[3], failed, cooldown_until)
end
if current <= tonumber(now_ms) then
  redis.call('XADD', KEYS[5], '*', 'event', 'provider_credential.' .. failure, 'org_id', org_id,
    'credential_id', failed, 'request_id', request_id, 'upstream_status', upstream_status,
    'cooldown_until_ms', cooldown_until, 'at_ms', now_ms)
end

-- The request's draft names who serves it now, so a lost request's record says so.
local function serving(credential_id)
  local draft = redis.call('HGET', KEYS[6], request_id)
  local newline = draft and string.find(draft, '\n', 1, true)
  if newline then
    redis.call('HSET', KEYS[6], request_id, credential_id .. string.sub(draft, newline))
  end
end

local credential, cooling_until = pick_credential(KEYS[3], KEYS[4], credentials, now_ms)
if credential then
  serving(credential)
  return {0, credential}
end
if byok_only == '1' then
  return {5, cooling_until}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {1}
end
sweep_expired(KEYS[1], KEYS[2], now_ms, 20)
-- Already held (its reserve held the wallet, or this failover ran before and is sent again
-- after a reconnect: decision 318): its own hold is not counted against it.
if not redis.call('ZSCORE', KEYS[2], request_id .. ':' .. amount_text) then
  local state = redis.call('HMGET', KEYS[1], 'balance', 'reserved')
  local available = stored_amount(state[1], 'wallet balance') - stored_amount(state[2], 'wallet reserved')
  if available < need then
    return {2, string.format('%.0f', math.max(available, 0))}
  end
  hold(KEYS[1], KEYS[2], request_id, amount_text, expires_at_ms)
end
serving('')
return {0, ''}
