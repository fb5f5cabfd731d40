-- gw_rebuild_usage_rollups_cache_parts() (051) reads only the UTC days whose records are all
-- still in usage_records. gw usage prune drops whole monthly partitions, and a server outside
-- UTC bounds them at its own midnights: the oldest partition left then starts inside a UTC day
-- whose other records are gone, and a rebuild after the prune set that day's (and its month's)
-- cache parts and searches from the records left, below its requests and tokens, which the
-- rollups keep whole.
CREATE OR REPLACE FUNCTION gw_rebuild_usage_rollups_cache_parts() RETURNS void
LANGUAGE plpgsql
SET datestyle = 'ISO, YMD'                       -- the partition bounds as read back below
AS $$
DECLARE
  since date;
  first_kept timestamptz;
BEGIN
  SELECT (date_trunc('day', applied_at AT TIME ZONE 'UTC') - interval '1 day')::date INTO since
    FROM schema_migrations WHERE name = '048_prompt_cache_rates.sql';
  IF since IS NULL THEN
    RETURN;                                      -- 048 not applied: no record has a part
  END IF;
  -- Only UTC days whose records are all still in the ledger: gw usage prune drops whole
  -- partitions, bounded at the server's midnights, so outside UTC the oldest partition left
  -- can begin inside a UTC day whose other records are gone. That day (and any before it)
  -- keeps what its rollups hold, as a month prune dropped does.
  SELECT min((regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']*)''\)'))[1]::timestamptz)
    INTO first_kept
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'usage_records'::regclass;
  IF first_kept IS NOT NULL THEN
    -- the first UTC midnight at or after it
    since := greatest(since,
      (first_kept AT TIME ZONE 'UTC' + interval '1 day' - interval '1 microsecond')::date);
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
