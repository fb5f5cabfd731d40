-- An Idempotency-Key's first request holds it by a lease (decision 388), not for a fixed 10
-- minutes: a key left `running` by a gateway that died mid-request is taken over by the retry
-- once its lease lapses (seconds), while a live request renews its lease and keeps it.
-- claim_id: the random id of the request holding the key; completion, release, failure and
-- the commit fence act only on the holder's own claim, so a request that outlived its lease
-- can neither commit its change nor write its answer over the one that took the key over.
-- lease_expires_at: until when the holder's claim stands (Postgres time, renewed by the holder).
-- took_effect: a transaction of the holder committed (set in that transaction): such a key is
-- never run again, it is reported as never answered.
-- Rows from before this migration (no claim_id) keep the old rule: running for 10 minutes
-- after created_at, then reported as never answered, never taken over (their effect is unknown).
ALTER TABLE idempotency_keys
  ADD COLUMN claim_id text,
  ADD COLUMN lease_expires_at timestamptz,
  ADD COLUMN took_effect boolean NOT NULL DEFAULT false;
