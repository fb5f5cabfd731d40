-- account-correct: moves a loaded account's balance or spend by a measured drift (gw reconcile
-- --repair). A relative change, so settles landing meanwhile are kept.
--
-- KEYS[1] account      hash { <field>, reserved }
-- ARGV[1] field        'balance' (wallet) or 'spent' (a cap period or a user's period)
-- ARGV[2] delta_nano   integer string, signed
--
-- Returns {0} when the account is not loaded (nothing to correct: it is rebuilt from Postgres
-- at its next use), {1, new_value_nano} otherwise. The new value must stay in range.
--#include amounts

local field = one_of(ARGV[1], 'field', {'balance', 'spent'})
local delta = amount(ARGV[2], 'delta_nano', true)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
local previous = stored_amount(redis.call('HGET', KEYS[1], field), field)
amount(string.format('%.0f', previous + delta), 'the corrected ' .. field, true)
return {1, tostring(redis.call('HINCRBY', KEYS[1], field, ARGV[2]))}
