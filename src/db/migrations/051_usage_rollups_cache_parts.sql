-- The prompt's cache parts and the web searches in the usage rollups (docs/decisions.md 330), so
-- the usage API says how much of the prompt the cache read and wrote, and how many searches
-- were made, as the ledger does since 048-050. The usage writer sums them like the other
-- columns (src/ledger/usage-rollups.ts). A constant default rewrites no table.
ALTER TABLE usage_rollups_daily
  ADD COLUMN cache_write_tokens     bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_write_1h_tokens  bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens      bigint NOT NULL DEFAULT 0,
  ADD COLUMN web_search_requests    bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_rollups_daily_product_users
  ADD COLUMN cache_write_tokens     bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_write_1h_tokens  bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens      bigint NOT NULL DEFAULT 0,
  ADD COLUMN web_search_requests    bigint NOT NULL DEFAULT 0;
ALTER TABLE usage_rollups_monthly_product_users
  ADD COLUMN cache_write_tokens     bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_write_1h_tokens  bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens      bigint NOT NULL DEFAULT 0,
  ADD COLUMN web_search_requests    bigint NOT NULL DEFAULT 0;

-- The monthly product-user rollup from the daily one, now with the new sums (042's function).
CREATE OR REPLACE FUNCTION gw_rebuild_usage_rollups_monthly_product_users() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- The writers' daily upserts wait until the caller commits.
  LOCK TABLE usage_rollups_daily_product_users IN SHARE MODE;
  DELETE FROM usage_rollups_monthly_product_users;
  INSERT INTO usage_rollups_monthly_product_users (org_id, month, product_user_id, currency,
    requests, input_tokens, output_tokens, total_tokens, sell_cost_nano, wallet_cost_nano,
    cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, web_search_requests)
  SELECT org_id, date_trunc('month', day)::date, product_user_id, currency, sum(requests),
         sum(input_tokens), sum(output_tokens), sum(total_tokens), sum(sell_cost_nano),
         sum(wallet_cost_nano), sum(cache_write_tokens), sum(cache_write_1h_tokens),
         sum(cache_read_tokens), sum(web_search_requests)
    FROM usage_rollups_daily_product_users
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4;                          -- an org's month on adjacent pages
END $$;

-- The new sums computed again from usage_records, for every rollup row whose UTC day (month)
-- can hold a record with any of them: the records' columns exist since 048 was applied (049:
-- one-hour writes, 050: searches, both later), and no gateway writes them before its version's
-- migrations ran (at its boot, or the Deployment's migrate step before it), so no such record
-- is older than 048's applied_at. A day before it is a margin for
-- the clocks of the gateways that stamp created_at. Every other rollup row has none of them.
-- Only records with a part are read, and only the rollup rows they fall in are written: a row
-- without any keeps 0. The sums are set, not added, so it can run again: in `gw usage
-- rebuild-totals`, for what an older instance's writer, which does not sum them, wrote during a
-- rollout. Grouped exactly as the writer groups its rows (UTC day or month, model, connection,
-- product user or '', currency). A month gw usage prune dropped has no records left and keeps
-- its sums.
CREATE FUNCTION gw_rebuild_usage_rollups_cache_parts() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  since date;
BEGIN
  SELECT (date_trunc('day', applied_at AT TIME ZONE 'UTC') - interval '1 day')::date INTO since
    FROM schema_migrations WHERE name = '048_prompt_cache_rates.sql';
  IF since IS NULL THEN
    RETURN;                                      -- 048 not applied: no record has a part
  END IF;
  -- The writers' upserts wait until the caller commits, so a record committed before is read
  -- and one committed after adds its own parts (a writer of this version).
  LOCK TABLE usage_rollups_daily, usage_rollups_daily_product_users,
             usage_rollups_monthly_product_users IN SHARE MODE;
  UPDATE usage_rollups_daily AS r
     SET cache_write_tokens = s.cache_write_tokens,
         cache_write_1h_tokens = s.cache_write_1h_tokens,
         cache_read_tokens = s.cache_read_tokens,
         web_search_requests = s.web_search_requests
    FROM (SELECT org_id, (created_at AT TIME ZONE 'UTC')::date AS day, model, app_connection_id,
                 currency, sum(cache_write_tokens) AS cache_write_tokens,
                 sum(cache_write_1h_tokens) AS cache_write_1h_tokens,
                 sum(cache_read_tokens) AS cache_read_tokens,
                 sum(web_search_requests) AS web_search_requests
            FROM usage_records
           WHERE created_at >= since::timestamp AT TIME ZONE 'UTC'
             AND (cache_write_tokens <> 0 OR cache_write_1h_tokens <> 0 OR cache_read_tokens <> 0
                  OR web_search_requests <> 0)
           GROUP BY 1, 2, 3, 4, 5) AS s
   WHERE r.org_id = s.org_id AND r.day = s.day AND r.model = s.model
     AND r.app_connection_id = s.app_connection_id AND r.currency = s.currency;
  UPDATE usage_rollups_daily_product_users AS r
     SET cache_write_tokens = s.cache_write_tokens,
         cache_write_1h_tokens = s.cache_write_1h_tokens,
         cache_read_tokens = s.cache_read_tokens,
         web_search_requests = s.web_search_requests
    FROM (SELECT org_id, (created_at AT TIME ZONE 'UTC')::date AS day,
                 COALESCE(product_user_id, '') AS product_user_id, currency,
                 sum(cache_write_tokens) AS cache_write_tokens,
                 sum(cache_write_1h_tokens) AS cache_write_1h_tokens,
                 sum(cache_read_tokens) AS cache_read_tokens,
                 sum(web_search_requests) AS web_search_requests
            FROM usage_records
           WHERE created_at >= since::timestamp AT TIME ZONE 'UTC'
             AND (cache_write_tokens <> 0 OR cache_write_1h_tokens <> 0 OR cache_read_tokens <> 0
                  OR web_search_requests <> 0)
           GROUP BY 1, 2, 3, 4) AS s
   WHERE r.org_id = s.org_id AND r.day = s.day AND r.product_user_id = s.product_user_id
     AND r.currency = s.currency;
  -- A month's sums from its days (the month of `since` whole: its days before it have none).
  UPDATE usage_rollups_monthly_product_users AS r
     SET cache_write_tokens = s.cache_write_tokens,
         cache_write_1h_tokens = s.cache_write_1h_tokens,
         cache_read_tokens = s.cache_read_tokens,
         web_search_requests = s.web_search_requests
    FROM (SELECT org_id, date_trunc('month', day)::date AS month, product_user_id, currency,
                 sum(cache_write_tokens) AS cache_write_tokens,
                 sum(cache_write_1h_tokens) AS cache_write_1h_tokens,
                 sum(cache_read_tokens) AS cache_read_tokens,
                 sum(web_search_requests) AS web_search_requests
            FROM usage_rollups_daily_product_users
           WHERE day >= date_trunc('month', since)::date
             AND (cache_write_tokens <> 0 OR cache_write_1h_tokens <> 0 OR cache_read_tokens <> 0
                  OR web_search_requests <> 0)
           GROUP BY 1, 2, 3, 4) AS s
   WHERE r.org_id = s.org_id AND r.month = s.month AND r.product_user_id = s.product_user_id
     AND r.currency = s.currency;
END $$;

SELECT gw_rebuild_usage_rollups_cache_parts();
