-- account-rebuild: installs an account rebuilt from Postgres, unless it is already there,
-- adding what settled since the rebuild read the org's usage stream (src/billing/
-- account-rebuild.ts). Settle does not charge an account missing from Redis, so each record
-- settled before this install must be in the amount and each settled after it is charged by
-- settle itself. The caller's amount counts every record settled up to its read of the stream
-- (the stream's last id then, cut_last_id); the records settled since are read here, from the
-- stream, atomically with the install. None of them can be in the caller's ledger snapshot
-- (taken before that read), and if the writer removed one from the stream meanwhile (the
-- stream's entries-added counter moved past what it holds after cut_last_id), it cannot be
-- counted from here either: the rebuild is refused and measured again.
--
-- KEYS[1] account       hash { <field>, reserved, gen }
-- KEYS[2] expiries      the account's hold-expiry zset: emptied on install, since the holds
--                       it lists belonged to the account that was lost
-- KEYS[3] usage_stream  the org's usage stream
-- ARGV[1] field         'balance' (wallet: less each record's wallet cost) or 'spent' (a cap
--                       period or a user's period: plus each matching record's sell cost)
-- ARGV[2] amount_nano   integer string: the account as of cut_last_id
-- ARGV[3] expire_at_ms  '' for no expiry (wallet); else when the period's account can go
-- ARGV[4] cut_last_id   the stream's last generated id at the caller's read ('0-0' when there
--                       was no stream)
-- ARGV[5] cut_added     the stream's entries-added counter at that read ('0' with no stream)
-- ARGV[6] match_field   '' (every record of the org), 'app_connection_id' or
--                       'product_user_id': the record field that must equal match_value
-- ARGV[7] match_value
-- ARGV[8] from          ISO time: records created before it are not the account's ('' none)
-- ARGV[9] to            ISO time: records created at or after it are not the account's
-- ARGV[10] generation   names this install; gw reconcile repairs only the install it measured
--
-- Returns {1, amount_installed} when installed, {0} when the account already existed (left
-- untouched), {-1} when a record settled since the read left the stream (measure again).
-- Validates every argument and every amount it reads before the first write.
--#include amounts

local field = one_of(ARGV[1], 'field', {'balance', 'spent'})
local value = amount(ARGV[2], 'amount_nano', true)
if ARGV[3] ~= '' then integer(ARGV[3], 'expire_at_ms') end
if not string.match(ARGV[4], '^%d+%-%d+$') then
  error('gw_invalid_argument: cut_last_id is not a stream id')
end
local cut_added = integer(ARGV[5], 'cut_added')
local match_field = one_of(ARGV[6], 'match_field', {'', 'app_connection_id', 'product_user_id'})
local match_value, from, to = ARGV[7], ARGV[8], ARGV[9]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0}
end

local added_now, since = 0, {}
if redis.call('EXISTS', KEYS[3]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[3])
  for index = 1, #info, 2 do
    if info[index] == 'entries-added' then added_now = info[index + 1] end
  end
  since = redis.call('XRANGE', KEYS[3], '(' .. ARGV[4], '+')
end
if added_now - cut_added ~= #since then
  return {-1}
end

-- A record's fields: flat, and (as settle.lua writes it) the packed `record` JSON beside them,
-- whose values win (src/ledger/usage-record.ts). Nil for an entry no reader could use.
local function record_of(fields)
  local record = {}
  for index = 1, #fields, 2 do record[fields[index]] = fields[index + 1] end
  if record.record then
    local ok, packed = pcall(cjson.decode, record.record)
    if not ok or type(packed) ~= 'table' then return nil end
    for name, text in pairs(packed) do
      if type(text) == 'string' then record[name] = text end
    end
  end
  return record
end

local cost_field = field == 'balance' and 'wallet_cost_nano' or 'sell_cost_nano'
for _, entry in ipairs(since) do
  local record = record_of(entry[2])
  local cost = record and record[cost_field]
  -- Notices (no cost) are no records, and an unreadable cost is the writer's to report (the
  -- ledger gets no row); a record that is not this account's is skipped.
  if cost and #cost <= 17 and string.match(cost, '^%d+$')
    and (match_field == '' or record[match_field] == match_value)
    and (from == '' or (record.created_at or '') >= from)
    and (to == '' or (record.created_at or '') < to) then
    local charged = amount(cost, cost_field, false)
    value = value + (field == 'balance' and -charged or charged)
  end
end
local installed = amount(string.format('%.0f', value), 'the rebuilt ' .. field, true)

redis.call('HSET', KEYS[1], field, string.format('%.0f', installed), 'reserved', '0', 'gen', ARGV[10])
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return {1, string.format('%.0f', installed)}
