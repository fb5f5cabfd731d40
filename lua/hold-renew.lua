-- hold-renew: moves the lapse of a request's holds later while the request still runs, so a
-- request that lasts longer than RESERVATION_TTL_MS (a long stream, a vendor that trickles)
-- keeps what it holds until it settles. A hold's lapse exists for an instance that died, not
-- for one still serving the request.
--
-- KEYS[1] wallet_expiries      zset '<request_id>:<amount>' -> hold expiry (ms)
-- KEYS[2] org_cap_expiries     the holds of the accounts reserve.lua holds on (a level the
-- KEYS[3] conn_cap_expiries    request does not hold on: a placeholder, where it has none)
-- KEYS[4] user_spend_expiries
-- KEYS[5] in_flight            hash request_id -> '<credential_id>\n<draft>' (reserve.lua): the
--                              draft's lapse moves with the holds, so the lost-request sweep
--                              never records a request while its holds stand
-- KEYS[6] user_credits         the product user's credits in the settlement currency
--                              (credits-change.lua): `until:<grant_id>` of a revoked grant
-- KEYS[7] draining_for         hash request_id -> the revoked grants that keep money for it
--                              (placeholders of the slot without a product user)
--
-- ARGV[1] request_id
-- ARGV[2] held_nano            the amount the reserve held on each account
-- ARGV[3] expires_at_ms        the holds' new lapse
--
-- Only a hold still listed moves (ZADD XX), and only later (GT): one settled, released or
-- swept already stays gone (its amount is no longer in `reserved`), and a renewal that Redis
-- runs late never brings a lapse forward. Nothing else changes: no amount is read or written.
--
-- A revoked grant that keeps money for this request (decision 406) keeps it as long as the
-- request's holds stand: its `until:<id>` moves with them (only later), and so does the
-- expiry of `draining_for`, which must outlive them by the minute credits-change.lua gives.
-- Without this, a request running past the lapse its holds had at the revocation settled
-- unpaid by the grant, past the user's allowance (decision 536).
--
-- Returns the number of holds renewed (the draft and the grants are not counted).
--#include amounts

local request_id = ARGV[1]
amount(ARGV[2], 'held_nano')
local expires_at_ms = integer(ARGV[3], 'expires_at_ms')
if type(request_id) ~= 'string' or request_id == '' then
  error('gw_invalid_argument: request_id is empty')
end
local member = request_id .. ':' .. ARGV[2]
local renewed = 0
for index = 1, 4 do
  renewed = renewed + redis.call('ZADD', KEYS[index], 'XX', 'GT', 'CH', expires_at_ms, member)
end
-- The draft (src/billing/in-flight-draft.ts, version 1) opens [1,"<instance>",<admitted>,
-- <lapses>,…: only that number changes. A draft of another form is left as it is.
local entry = redis.call('HGET', KEYS[5], request_id)
if entry then
  local head, lapses, tail = string.match(entry, '^([^\n]*\n%[1,"[^"]*",%d+,)(%d+)(,.*)$')
  if head and tonumber(lapses) < expires_at_ms then
    redis.call('HSET', KEYS[5], request_id, head .. string.format('%.0f', expires_at_ms) .. tail)
  end
end
local kept_by = redis.call('HGET', KEYS[7], request_id)
if kept_by then
  for grant_id in string.gmatch(kept_by, '[^,]+') do
    local until_ms = redis.call('HGET', KEYS[6], 'until:' .. grant_id)
    if until_ms and tonumber(until_ms) < expires_at_ms then
      redis.call('HSET', KEYS[6], 'until:' .. grant_id, string.format('%.0f', expires_at_ms))
    end
  end
  redis.call('PEXPIREAT', KEYS[7], string.format('%.0f', expires_at_ms + 60000), 'GT')
end
return renewed
