-- Daily usage rollups for the dashboard's plots. The usage writer upserts them in the
-- statement that inserts the usage records, counting only the rows actually inserted, so a
-- replayed entry never counts twice. The dashboard reads these, never a scan of usage_records.
-- Two tables, so the many product users of an organization do not multiply the rows the
-- day, model and connection plots read: one by (day, model, connection), one by
-- (day, product user).
CREATE TABLE usage_rollups_daily (
  org_id             text NOT NULL,
  day                date NOT NULL,                 -- UTC
  model              text NOT NULL,
  app_connection_id  text NOT NULL,
  currency           char(3) NOT NULL,
  requests           bigint NOT NULL,
  input_tokens       bigint NOT NULL,
  output_tokens      bigint NOT NULL,
  total_tokens       bigint NOT NULL,
  sell_cost_nano     bigint NOT NULL,               -- nano-units: summed fast, exactly
  wallet_cost_nano   bigint NOT NULL,
  PRIMARY KEY (org_id, day, model, app_connection_id, currency)
) WITH (fillfactor = 70);                          -- room for HOT updates of the sums

CREATE TABLE usage_rollups_daily_product_users (
  org_id             text NOT NULL,
  day                date NOT NULL,                 -- UTC
  product_user_id    text NOT NULL,                 -- '' for requests with no product user
  currency           char(3) NOT NULL,
  requests           bigint NOT NULL,
  input_tokens       bigint NOT NULL,
  output_tokens      bigint NOT NULL,
  total_tokens       bigint NOT NULL,
  sell_cost_nano     bigint NOT NULL,               -- nano-units: summed fast, exactly
  wallet_cost_nano   bigint NOT NULL,
  PRIMARY KEY (org_id, day, product_user_id, currency)
) WITH (fillfactor = 70);

-- What the ledger already holds when this migration runs.
INSERT INTO usage_rollups_daily
SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, model, app_connection_id, currency,
       count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens), sum((sell_cost * 1000000000)::bigint),
       sum((wallet_cost * 1000000000)::bigint)
  FROM usage_records
 GROUP BY 1, 2, 3, 4, 5;

INSERT INTO usage_rollups_daily_product_users
SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, COALESCE(product_user_id, ''), currency,
       count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens), sum((sell_cost * 1000000000)::bigint),
       sum((wallet_cost * 1000000000)::bigint)
  FROM usage_records
 GROUP BY 1, 2, 3, 4;

-- The dashboard's product-user search: prefix of the external id, or of the display name
-- (case-insensitive), within one organization.
CREATE INDEX IF NOT EXISTS product_users_org_external_prefix
  ON product_users (org_id, external_user_id text_pattern_ops);
CREATE INDEX IF NOT EXISTS product_users_org_name_prefix
  ON product_users (org_id, lower(display_name) text_pattern_ops);
