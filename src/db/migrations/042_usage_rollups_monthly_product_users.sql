-- Monthly usage per product user: the sums of usage_rollups_daily_product_users per UTC month,
-- so the dashboard's product-user grouping and the overview's top product users read one row
-- per user and month for the whole months of their range instead of one per user and day
-- (src/ledger/product-user-rollups.ts). The usage writer upserts it in the statement that
-- upserts the daily rows, from the same inserted rows; like the daily rollups it is kept when
-- gw usage prune drops a month of usage_records, so the two always agree.
-- gw_rebuild_usage_rollups_monthly_product_users() computes it again from the daily rows (this
-- migration, `gw usage rebuild-totals`).
CREATE TABLE usage_rollups_monthly_product_users (
  org_id             text NOT NULL,
  month              date NOT NULL,                 -- first day of the UTC month
  product_user_id    text NOT NULL,                 -- '' for requests with no product user
  currency           char(3) NOT NULL,
  requests           bigint NOT NULL,
  input_tokens       bigint NOT NULL,
  output_tokens      bigint NOT NULL,
  total_tokens       bigint NOT NULL,
  sell_cost_nano     bigint NOT NULL,
  wallet_cost_nano   bigint NOT NULL,
  PRIMARY KEY (org_id, month, product_user_id, currency)
) WITH (fillfactor = 70);

CREATE FUNCTION gw_rebuild_usage_rollups_monthly_product_users() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- The writers' daily upserts wait until the caller commits.
  LOCK TABLE usage_rollups_daily_product_users IN SHARE MODE;
  DELETE FROM usage_rollups_monthly_product_users;
  INSERT INTO usage_rollups_monthly_product_users
  SELECT org_id, date_trunc('month', day)::date, product_user_id, currency, sum(requests),
         sum(input_tokens), sum(output_tokens), sum(total_tokens), sum(sell_cost_nano),
         sum(wallet_cost_nano)
    FROM usage_rollups_daily_product_users
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4;                          -- an org's month on adjacent pages
END $$;

SELECT gw_rebuild_usage_rollups_monthly_product_users();
ANALYZE usage_rollups_monthly_product_users;     -- read at once, before autovacuum comes by
