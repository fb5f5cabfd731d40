-- Rebuilding an app-connection cap's account from the ledger sums the connection's usage in
-- the period: without this index that query scans the whole month's partition.
CREATE INDEX IF NOT EXISTS usage_records_connection_time
  ON usage_records (app_connection_id, created_at);
