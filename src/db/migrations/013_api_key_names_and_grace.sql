-- API keys get a display name, and an end of life: a rotated key with a grace period keeps
-- working until expires_at (checked on every request, cached or not), then answers
-- gw_key_inactive. replaced_by names the key a rotation issued in its place.
ALTER TABLE api_keys
  ADD COLUMN name        text,
  ADD COLUMN expires_at  timestamptz,
  ADD COLUMN replaced_by text;
CREATE INDEX api_keys_connection_created ON api_keys (app_connection_id, created_at, id);
CREATE INDEX service_keys_org_created ON service_keys (org_id, created_at, id);
