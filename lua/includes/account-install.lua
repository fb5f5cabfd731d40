-- Installs an account rebuilt from Postgres unless it is already there (account-rebuild.lua's
-- header gives the rule and names ARGV[1..7], which these functions read).

-- Validates ARGV[1..7]; returns the amount and the missed amount at the cut.
local function account_install_args()
  one_of(ARGV[1], 'field', {'balance', 'spent'})
  local value = amount(ARGV[2], 'amount_nano', true)
  if ARGV[3] ~= '' then integer(ARGV[3], 'expire_at_ms') end
  return value, amount(ARGV[4], 'missed_at_cut', true)
end

-- {1, amount_installed}, {0} (already there: left untouched) or {-1} (listed anew: measure
-- again). Writes nothing before its last check.
local function install_account(account, expiries, rebuilds, value, missed_at_cut)
  if redis.call('EXISTS', account) == 1 then
    redis.call('HDEL', rebuilds, account, ARGV[6])
    return {0}
  end
  local listed = redis.call('HMGET', rebuilds, account, ARGV[6])
  local missed_now = listed[1]
  if not missed_now or listed[2] ~= ARGV[7] then
    return {-1}
  end
  value = value + amount(missed_now, 'the missed amount', true) - missed_at_cut
  local installed = amount(string.format('%.0f', value), 'the rebuilt ' .. ARGV[1], true)

  redis.call('HSET', account, ARGV[1], string.format('%.0f', installed), 'reserved', '0', 'gen', ARGV[5])
  redis.call('HDEL', rebuilds, account, ARGV[6])
  redis.call('DEL', expiries)
  if ARGV[3] ~= '' then
    redis.call('PEXPIREAT', account, ARGV[3])
  end
  return {1, string.format('%.0f', installed)}
end
