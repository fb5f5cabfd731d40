-- account-rebuild: installs an account rebuilt from Postgres, unless it is already there,
-- adding what settled since the rebuild read the org's usage stream (src/billing/
-- account-rebuild.ts). Settle does not charge an account missing from Redis, so each record
-- settled before this install must be in the amount and each settled after it is charged by
-- settle itself. The caller's amount counts every record settled up to its read of the stream
-- (the cut). Before that read the rebuild listed the account in `rebuilds`, so every settle
-- since that met the account missing added what it would have charged to that field
-- (settle.lua); the cut read the field too (missed_at_cut). What settled after the cut is the
-- field's growth since: none of it can be in the caller's ledger snapshot (taken before the
-- cut), and none of it is in the cut. It does not matter whether the writer has moved those
-- records to Postgres meanwhile, so a busy org's rebuild is never refused for its traffic.
--
-- KEYS[1] account       hash { <field>, reserved, gen }
-- KEYS[2] expiries      the account's hold-expiry zset: emptied on install, since the holds
--                       it lists belonged to the account that was lost
-- KEYS[3] rebuilds      hash account key -> what settles did not charge it while missing
-- ARGV[1] field         'balance' (wallet: settles added minus their wallet cost) or 'spent'
--                       (a cap period or a user's period: plus their sell cost)
-- ARGV[2] amount_nano   integer string: the account as of the cut
-- ARGV[3] expire_at_ms  '' for no expiry (wallet); else when the period's account can go
-- ARGV[4] missed_at_cut integer string (may be negative): the account's `rebuilds` field as
--                       the cut read it
-- ARGV[5] generation    names this install; gw reconcile repairs only the install it measured
-- ARGV[6] listing_field the `rebuilds` field holding the account's listing token
-- ARGV[7] listing       the token the rebuild listed the account under and found at its cut.
--                       The same token now means no install came between (each takes the
--                       listing off; a listing made anew gets a new token): the account was
--                       missing since the cut and every settle meanwhile is in the field. A
--                       field listed anew counts only what settled since, not what was charged
--                       to an account installed and lost again in between (review of 304).
--
-- Returns {1, amount_installed} when installed, {0} when the account already existed (left
-- untouched), {-1} when the account is no longer listed in `rebuilds` under the rebuild's
-- token (another install took it off, and the account was lost again since: measure again).
-- Validates every argument and every amount it reads before the first write.
--#include amounts

one_of(ARGV[1], 'field', {'balance', 'spent'})
local value = amount(ARGV[2], 'amount_nano', true)
if ARGV[3] ~= '' then integer(ARGV[3], 'expire_at_ms') end
local missed_at_cut = amount(ARGV[4], 'missed_at_cut', true)
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HDEL', KEYS[3], KEYS[1], ARGV[6])
  return {0}
end
local listed = redis.call('HMGET', KEYS[3], KEYS[1], ARGV[6])
local missed_now = listed[1]
if not missed_now or listed[2] ~= ARGV[7] then
  return {-1}
end
value = value + amount(missed_now, 'the missed amount', true) - missed_at_cut
local installed = amount(string.format('%.0f', value), 'the rebuilt ' .. ARGV[1], true)

redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', installed), 'reserved', '0', 'gen', ARGV[5])
redis.call('HDEL', KEYS[3], KEYS[1], ARGV[6])
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return {1, string.format('%.0f', installed)}
