-- Daily usage rollups for the dashboard's plots: one row per organization, UTC day, model,
-- connection, product user and currency. The usage writer upserts them in the transaction
-- that inserts the usage records, counting only the rows actually inserted, so a replayed
-- entry never counts twice. The dashboard reads these, never a scan of usage_records.
CREATE TABLE usage_rollups_daily (
  org_id             text NOT NULL,
  day                date NOT NULL,                 -- UTC
  model              text NOT NULL,
  app_connection_id  text NOT NULL,
  product_user_id    text NOT NULL DEFAULT '',      -- '' for requests with no product user
  currency           char(3) NOT NULL,
  requests           bigint NOT NULL,
  input_tokens       bigint NOT NULL,
  output_tokens      bigint NOT NULL,
  total_tokens       bigint NOT NULL,
  sell_cost          numeric(30, 12) NOT NULL,
  wallet_cost        numeric(30, 12) NOT NULL,
  PRIMARY KEY (org_id, day, model, app_connection_id, product_user_id, currency)
);

-- What the ledger already holds when this migration runs.
INSERT INTO usage_rollups_daily
SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, model, app_connection_id,
       COALESCE(product_user_id, ''), currency, count(*), sum(input_tokens), sum(output_tokens),
       sum(total_tokens), sum(sell_cost), sum(wallet_cost)
  FROM usage_records
 GROUP BY 1, 2, 3, 4, 5, 6;

-- The dashboard's product-user search: prefix of the external id, or of the display name
-- (case-insensitive), within one organization.
CREATE INDEX IF NOT EXISTS product_users_org_external_prefix
  ON product_users (org_id, external_user_id text_pattern_ops);
CREATE INDEX IF NOT EXISTS product_users_org_name_prefix
  ON product_users (org_id, lower(display_name) text_pattern_ops);
