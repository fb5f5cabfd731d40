-- The dispatcher's first lookup, per endpoint again (docs/decisions.md 317): which enabled
-- endpoints have a delivery due. 046 dropped 025's index for it and kept only the per-lane
-- pair, so the claim looked for due work lane by lane, 8 lookups per endpoint, or by reading
-- every due delivery: with 10,000 endpoints and 200,000 deliveries due on one of them, 150 ms
-- a claim (one claim per attempt), against 13 ms with this index (the lanes of the endpoints
-- it finds are then looked at alone). On a table too large for the pause, create it
-- beforehand CONCURRENTLY; IF NOT EXISTS skips the build.
CREATE INDEX IF NOT EXISTS webhook_deliveries_due
  ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
