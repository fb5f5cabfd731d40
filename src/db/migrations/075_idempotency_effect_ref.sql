-- What the first request with a key committed, named by its route (a wallet top-up's ledger
-- transaction id), for a route that can finish a request that committed its change and then
-- failed before answering (decision 542): written by the commit fence in the transaction that
-- commits it, with the claim that wrote it. A gateway reads it only while effect_claim_id is
-- the row's claim_id, so a ref an earlier claim of the key left (a gateway of the previous
-- version takes a key over without clearing it) is never taken for a later request's.
ALTER TABLE idempotency_keys ADD COLUMN effect_ref text, ADD COLUMN effect_claim_id text;
