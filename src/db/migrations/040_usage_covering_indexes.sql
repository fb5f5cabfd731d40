-- The ledger sums that a waiting request or page reads — a wallet's usage (top-ups − usage),
-- an org cap's, a connection cap's or a product user's spend in its period (account rebuilds,
-- gw reconcile), a product user's or an API key's usage totals — each select one owner's rows
-- by (owner, created_at) and sum a few columns. On a large organization those are hundreds of
-- thousands of rows a month, spread over every page of the partition: measured on 10 million
-- rows (bench/ledger-10m.ts, bench/RESULTS.md) the heap reads were nearly all of the time. Each
-- lookup index now carries the columns its sums read (INCLUDE), so the sums are index-only
-- scans. Same keys as the indexes of 001 and 004, which they replace: no more indexes for the
-- writer to maintain than before.
--
-- On the partitioned parent, CREATE INDEX builds the index on every partition (and each new
-- month's partition gets it when created). It holds usage_records' writes, not its reads, while
-- it builds; the usage writer waits and usage stays in the Redis streams meanwhile. A ledger too
-- large for that pause: create them beforehand per partition, CONCURRENTLY, and attach them
-- (docs/decisions.md 260); IF NOT EXISTS then skips the build here.
CREATE INDEX IF NOT EXISTS usage_records_org_time_cost
  ON usage_records (org_id, created_at) INCLUDE (sell_cost, wallet_cost);
CREATE INDEX IF NOT EXISTS usage_records_connection_time_cost
  ON usage_records (app_connection_id, created_at) INCLUDE (sell_cost);
CREATE INDEX IF NOT EXISTS usage_records_user_time_usage
  ON usage_records (product_user_id, created_at) INCLUDE (sell_cost, input_tokens, output_tokens);
CREATE INDEX IF NOT EXISTS usage_records_key_time_usage
  ON usage_records (api_key_id, created_at) INCLUDE (sell_cost, input_tokens, output_tokens);

DROP INDEX IF EXISTS usage_records_org_time;
DROP INDEX IF EXISTS usage_records_connection_time;
DROP INDEX IF EXISTS usage_records_user_time;
DROP INDEX IF EXISTS usage_records_key_time;
