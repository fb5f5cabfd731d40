-- Idempotency-Keys are one caller's (decision 379): a dashboard user's, or a service key's,
-- not their organization's. Another member sending the same key and body is a request of
-- their own: it never replays the first caller's answer (which may hold a secret shown once).
-- caller: `user:<user id>` or `service_key:<key id>`. Rows written before this migration
-- (24 hours at most) belong to no caller: no request matches them, and the sweep removes them.
ALTER TABLE idempotency_keys ADD COLUMN caller text NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ALTER COLUMN caller DROP DEFAULT;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (org_id, caller, route, key);
