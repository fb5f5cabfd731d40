-- Why each request ended (the charging policy's reason, docs/charging.md) and whether the
-- built-in mock vendor served it: mock answers are a development tool, never billed traffic,
-- and a record must say so. Additive: older rows keep NULL / false.
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS end_reason text;
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS served_by_mock boolean NOT NULL DEFAULT false;
