-- credits-load: merges a user's credit grants in one currency, rebuilt from Postgres, into
-- Redis. Per-grant HSETNX: a grant added or consumed concurrently is never overwritten,
-- never lost; a grant revoked meanwhile (its `revoked:<id>` mark) is not brought back. What
-- revoked grants kept for the requests in flight (`draining`) and what is left on expired
-- grants stay as they are (docs/decisions.md, 289). A grant with nothing left is not listed in
-- the grants zset (decision 305).
--
-- KEYS[1] user_credits   hash { loaded, g:<grant_id> -> remaining, revoked:<grant_id> }
-- KEYS[2] user_grants    zset grant_id -> expiry (ms)
-- ARGV[1] ttl_ms         how long the loaded set may stay before it is rebuilt
-- ARGV[2..] grants       grant_id, remaining_nano, expires_at_ms, ... (triples)
--
-- Returns the number of grants installed. Every triple, and the credit Redis holds for each
-- grant, is validated before the first write.
--#include amounts
--#include credits-merge

integer(ARGV[1], 'ttl_ms')
credit_triples(2, KEYS[1])
return merge_credits(KEYS[1], KEYS[2], ARGV[1], 2)
