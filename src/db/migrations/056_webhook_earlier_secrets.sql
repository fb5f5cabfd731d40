-- A webhook endpoint's secrets retired before the last rotation that still sign until their
-- own grace period ends (docs/decisions.md 361): [{"sealed": <sealed secret>, "expires_at":
-- <RFC 3339>}], oldest first. previous_secret_sealed stays the one the last rotation retired,
-- so an instance older than this migration still signs with the current and that one.
ALTER TABLE webhook_endpoints ADD COLUMN earlier_secrets jsonb NOT NULL DEFAULT '[]'::jsonb;
