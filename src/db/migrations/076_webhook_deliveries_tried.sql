-- The deliveries that enabling a disabled endpoint sends again from the start of their
-- schedule (docs/decisions.md 503, 549): those tried and not delivered, pending on a later
-- step or failed. Without it the enabling read every delivery of the endpoint to find them,
-- and had rewritten the whole backlog, weeks of messages that waited untried while it was
-- disabled (504), in one statement: past DATABASE_TIMEOUT_MS, a 500 and the endpoint still
-- disabled. Only failing deliveries enter it (a first attempt that succeeds never does). On
-- a table too large for the pause, create it beforehand CONCURRENTLY; IF NOT EXISTS skips
-- the build.
CREATE INDEX IF NOT EXISTS webhook_deliveries_tried
  ON webhook_deliveries (endpoint_id) WHERE retry_step > 0 AND state <> 'delivered';
