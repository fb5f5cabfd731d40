-- account-correct: moves a loaded account's balance or spend by a measured drift (gw reconcile
-- --repair). A relative change, so settles landing meanwhile are kept.
--
-- KEYS[1] account      hash { <field>, reserved, gen }
-- ARGV[1] field        'balance' (wallet) or 'spent' (a cap period or a user's period)
-- ARGV[2] delta_nano   integer string, signed
-- ARGV[3] generation   the account's `gen` when the drift was measured ('' for an account
--                      installed without one)
--
-- Returns {0} when the account is not loaded (nothing to correct: it is rebuilt from Postgres
-- at its next use) or was rebuilt since the drift was measured (its `gen` moved: the rebuild
-- counted the ledger afresh, and the drift measured on the account before is not its drift),
-- {1, new_value_nano} otherwise. The new value must stay in range.
--#include amounts

local field = one_of(ARGV[1], 'field', {'balance', 'spent'})
local delta = amount(ARGV[2], 'delta_nano', true)
local state = redis.call('HMGET', KEYS[1], field, 'gen')
if not state[1] or (state[2] or '') ~= ARGV[3] then
  return {0}
end
local previous = stored_amount(state[1], field)
amount(string.format('%.0f', previous + delta), 'the corrected ' .. field, true)
return {1, tostring(redis.call('HINCRBY', KEYS[1], field, ARGV[2]))}
