-- An OAuth client's secrets retired by a rotation that still authenticate until their grace
-- period ends (docs/decisions.md 374): [{"hash": <sha256 hex>, "expires_at": <RFC 3339>}],
-- oldest first. Hashes only, as client_secret_hash; those past their grace may linger until
-- the next rotation drops them, and are refused like a wrong secret.
ALTER TABLE oauth_clients ADD COLUMN retired_secrets jsonb NOT NULL DEFAULT '[]'::jsonb;
