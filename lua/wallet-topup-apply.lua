-- wallet-topup-apply: adds a committed top-up (or a balance set's difference, which may be
-- negative: decision 544) to the live wallet it was marked owed to (wallet-topup-pending.lua),
-- once; or forgets the mark of a change that never committed. Run after the commit, and again
-- by whoever finds the mark left (a Redis step that failed: the wallet's next read or change,
-- `gw reconcile`; decision 521).
--
-- KEYS[1] wallet       hash { balance, reserved, gen, applied: how many changes were added
--                      here (gw reconcile reads it before its ledger snapshot and with the
--                      balance: one that moved between was added meanwhile, decision 563) }
-- KEYS[2] pending      hash transaction_id -> the `gen` of the wallet the change is owed to
--                      (the top-ups' hash, or the sets')
-- ARGV[1] transaction_id  the change's ledger transaction
-- ARGV[2] amount_nano  its amount (signed), or '' for a transaction that did not commit
--
-- Returns {1, previous_balance_nano} when added, {0} when nothing changed: no mark (added
-- already, or lost with the wallet: a wallet installed since counts the ledger), the
-- transaction did not commit, or the wallet is gone or is not the one the mark names (rebuilt
-- since: its install measured the ledger after the wallet it was owed to went, which was after
-- the mark, so the rebuild may count the top-up; where it does not, `gw reconcile --repair`).
-- The mark goes either way. {-1} when the sum would leave the amounts' range: the mark stays.
--#include amounts

integer(ARGV[1], 'transaction_id')
local value = nil
if ARGV[2] ~= '' then value = amount(ARGV[2], 'amount_nano', true) end
local owed_to = redis.call('HGET', KEYS[2], ARGV[1])
if not owed_to then
  return {0}
end
local wallet = redis.call('HMGET', KEYS[1], 'balance', 'gen')
if value == nil or not wallet[1] or (wallet[2] or '') ~= owed_to then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return {0}
end
local previous = stored_amount(wallet[1], 'wallet balance')
if previous + value >= 2251799813685248 or previous + value <= -2251799813685248 then
  return {-1}
end
redis.call('HINCRBY', KEYS[1], 'balance', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'applied', 1)
redis.call('HDEL', KEYS[2], ARGV[1])
return {1, wallet[1]}
