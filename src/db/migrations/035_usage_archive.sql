-- Pruning an old month of usage_records (gw usage prune) keeps every wallet's ledger balance:
-- in the same transaction it records what the dropped rows took from each wallet as one
-- 'usage_archived' transaction (negative), so top-ups − usage stays what it was.
ALTER TABLE wallet_transactions DROP CONSTRAINT IF EXISTS wallet_transactions_kind_check;
ALTER TABLE wallet_transactions
  ADD CONSTRAINT wallet_transactions_kind_check CHECK (kind IN ('topup', 'set', 'usage_archived'));
