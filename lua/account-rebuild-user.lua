-- account-rebuild-user: installs a product user's period account rebuilt from Postgres, as
-- account-rebuild.lua does, and with it merges the user's credits in the settlement currency
-- measured in the same snapshot and cut (docs/decisions.md, 308), as credits-load.lua does.
-- One step: once the account is there, no request loads the credits again until they go, so
-- an install must never leave them out. Merged too when the account is already there
-- (another instance installed it since the cut: a merge keeps what Redis has, and spares a
-- measurement for the credits alone); not when the rebuild must measure again.
--
-- KEYS[1] account       the user's period account (see account-rebuild.lua)
-- KEYS[2] expiries
-- KEYS[3] rebuilds
-- KEYS[4] user_credits  hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> }
-- KEYS[5] user_grants   zset grant_id -> expiry (ms)
-- ARGV[1] field         as account-rebuild.lua: 'spent'
-- ARGV[2] amount_nano
-- ARGV[3] expire_at_ms
-- ARGV[4] missed_at_cut
-- ARGV[5] generation
-- ARGV[6] listing_field
-- ARGV[7] listing
-- ARGV[8] ttl_ms        how long the loaded credits may stay before they are rebuilt
-- ARGV[9..] grants      grant_id, remaining_nano, expires_at_ms, ... (triples)
--
-- Returns what account-rebuild.lua returns. Validates every argument, and the credit Redis
-- holds for each grant, before the first write.
--#include amounts
--#include account-install
--#include credits-merge

local value, missed_at_cut = account_install_args()
integer(ARGV[8], 'ttl_ms')
credit_triples(9, KEYS[4])
local outcome = install_account(KEYS[1], KEYS[2], KEYS[3], value, missed_at_cut)
if outcome[1] >= 0 then
  merge_credits(KEYS[4], KEYS[5], ARGV[8], 9)
end
return outcome
