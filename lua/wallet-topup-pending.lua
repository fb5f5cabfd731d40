-- wallet-topup-pending: marks a top-up (or a balance set: decision 544) as owed to the live
-- wallet, inside the Postgres transaction that records it, before its commit
-- (src/billing/wallets.ts, decision 521).
--
-- KEYS[1] wallet       hash { balance, reserved, gen }
-- KEYS[2] pending      hash transaction_id -> the `gen` of the wallet the change is owed to
--                      ('' for a wallet installed without one): the top-ups', or the sets'
-- ARGV[1] transaction_id  the change's ledger transaction (wallet_transactions.id)
--
-- Returns {1} when marked: the wallet loaded now was installed before the top-up's commit, so
-- its balance lacks the top-up, and wallet-topup-apply.lua adds it there once. {0} when the
-- wallet is not loaded (Redis lost it since the caller put it there: a rebuild counts the
-- ledger's top-ups). Installs of the wallet come with a new `gen`, so a mark never reaches a
-- wallet rebuilt since, whose ledger may have the top-up already.
--#include amounts

integer(ARGV[1], 'transaction_id')
local gen = redis.call('HMGET', KEYS[1], 'balance', 'gen')
if not gen[1] then
  return {0}
end
redis.call('HSET', KEYS[2], ARGV[1], gen[2] or '')
return {1}
