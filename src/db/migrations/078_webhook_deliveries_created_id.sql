-- Redelivery since a time walks an endpoint's deliveries in batches of its own short
-- transactions (decision 577), each batch the next ones in (created_at, id) order after the
-- last: this index answers each batch from where the last one ended, whatever the number of
-- deliveries made at one instant (one transaction's messages share their created_at). It
-- serves everything 077's webhook_deliveries_created (endpoint_id, created_at) did, which is
-- dropped. On a table too large for the pause, create it beforehand CONCURRENTLY; IF NOT
-- EXISTS skips the build.
CREATE INDEX IF NOT EXISTS webhook_deliveries_created_id
  ON webhook_deliveries (endpoint_id, created_at, id);
DROP INDEX IF EXISTS webhook_deliveries_created;
