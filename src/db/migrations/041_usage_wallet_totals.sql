-- The running total of what usage took from each wallet, per organization and UTC month, so a
-- wallet's ledger balance is sum(wallet_transactions) − sum(usage_wallet_totals) instead of a
-- sum over every usage row of the organization (1.5 s at 3 million rows, read by a top-up under
-- the wallet's row lock, a wallet rebuild and gw reconcile). It is, at every commit, the
-- grouped sum of usage_records:
--  - the usage writer upserts it in the statement that inserts the rows, from the rows that
--    statement actually inserted (src/ledger/usage-rollups.ts), so a replay never counts twice;
--  - gw usage prune subtracts what a dropped month held, in the transaction that records the
--    month's 'usage_archived' wallet transactions (src/ledger/retention.ts);
--  - gw_rebuild_usage_wallet_totals() computes it again from usage_records (this migration,
--    `gw usage rebuild-totals` after rows were written by anything else: an instance of a
--    version before this one, still running during a rollout).
-- wallet_cost is numeric like the ledger's column, so the sum is the old sum to the last digit.
CREATE TABLE usage_wallet_totals (
  org_id       text NOT NULL,
  month        date NOT NULL,                  -- first day of the UTC month of created_at
  records      bigint NOT NULL,                -- the rows counted (a month's row goes at 0)
  wallet_cost  numeric(30, 12) NOT NULL,
  PRIMARY KEY (org_id, month)
) WITH (fillfactor = 70);                      -- room for HOT updates of the sums

-- Taken first by the two changes of the totals that are not the writer's, a rebuild and a
-- prune, so they run one after the other: each takes the ledger's locks in an order that could
-- otherwise deadlock with the other's.
CREATE FUNCTION gw_lock_usage_wallet_totals() RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(7207431041) $$;

CREATE FUNCTION gw_rebuild_usage_wallet_totals() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM gw_lock_usage_wallet_totals();
  -- No usage row may be written until the caller commits (writers wait), so none is in the
  -- ledger and missing from its total.
  LOCK TABLE usage_records IN SHARE MODE;
  DELETE FROM usage_wallet_totals;
  INSERT INTO usage_wallet_totals (org_id, month, records, wallet_cost)
  SELECT org_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, count(*), sum(wallet_cost)
    FROM usage_records
   GROUP BY 1, 2
   ORDER BY 1, 2;
END $$;

SELECT gw_rebuild_usage_wallet_totals();
ANALYZE usage_wallet_totals;                     -- read at once, before autovacuum comes by
