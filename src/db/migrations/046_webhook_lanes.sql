-- Webhook lanes (docs/decisions.md 317): an endpoint's deliveries go out on 8 lanes at once
-- instead of one attempt at a time. A message's lane is a hash of its subject (the product
-- user, the credential, the org…: src/webhooks/events.ts), so the messages about one subject
-- share a lane and keep their creation order while the endpoint is healthy. The dispatcher
-- claims a lane by locking its row here (FOR UPDATE SKIP LOCKED) for the length of the
-- attempt, as it claimed the whole endpoint before; the endpoint's health stays on
-- webhook_endpoint_states.

-- The lane of a subject, the one definition (the outbox calls it when it queues a message).
-- hashtextextended is the hash Postgres keeps stable for hash partitioning; & 7: 8 lanes.
CREATE FUNCTION gw_webhook_lane(subject text) RETURNS smallint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (hashtextextended(subject, 0) & 7)::smallint $$;

-- Deliveries queued from now on get their lane from the outbox; those of an instance of the
-- version before this one (a rolling deploy) go to lane 0. First of the table locks: it waits
-- for the older instances' attempts in flight while this migration holds nothing they need to
-- record them. Taken after the state row's trigger (the lane table's foreign key, the trigger),
-- an attempt recording meanwhile waited for this migration and this migration for it: a
-- deadlock, the migration or the attempt's record rolled back.
ALTER TABLE webhook_deliveries ADD COLUMN lane smallint NOT NULL DEFAULT 0;

CREATE TABLE webhook_endpoint_lanes (
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  lane             smallint NOT NULL CHECK (lane BETWEEN 0 AND 7),
  -- when this lane's last attempt began: lanes with due work take turns by it
  last_attempt_at  timestamptz,
  PRIMARY KEY (endpoint_id, lane)
);

-- An endpoint's lanes come with its state row, whoever inserts it (an instance of the version
-- before this one, during a rolling deploy, inserts the state row alone).
CREATE FUNCTION gw_webhook_endpoint_lanes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_endpoint_lanes (endpoint_id, lane)
  SELECT NEW.endpoint_id, lane FROM generate_series(0, 7) AS lane
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_endpoint_lanes_create AFTER INSERT ON webhook_endpoint_states
  FOR EACH ROW EXECUTE FUNCTION gw_webhook_endpoint_lanes();

INSERT INTO webhook_endpoint_lanes (endpoint_id, lane)
SELECT s.endpoint_id, lane FROM webhook_endpoint_states s, generate_series(0, 7) AS lane;

-- The deliveries still pending move to their subject's lane, so a backlog queued before this
-- migration drains on every lane, and a subject's older messages share the lane of its newer
-- ones. The subject as src/webhooks/events.ts (EVENT_SUBJECTS) picks it, read from the body;
-- the org when the body has no such id.
UPDATE webhook_deliveries d
   SET lane = gw_webhook_lane(COALESCE(NULLIF(
         m.payload::jsonb -> 'data' ->> CASE
           WHEN m.event_type LIKE 'product\_user.%' OR m.event_type LIKE 'credit\_grant.%'
             THEN 'product_end_user_id'
           WHEN m.event_type IN ('cap.threshold', 'wallet.low_balance') THEN NULL
           ELSE 'id' END, ''),
         m.org_id))
  FROM webhook_messages m
 WHERE m.id = d.message_id AND d.state = 'pending';

-- The dispatcher's two lookups, per lane now: is a delivery due, and the lane's oldest one.
-- They replace 025's per-endpoint pair (same number of indexes to maintain). On a table too
-- large for the pause, create them beforehand CONCURRENTLY; IF NOT EXISTS skips the build.
CREATE INDEX IF NOT EXISTS webhook_deliveries_lane_due
  ON webhook_deliveries (endpoint_id, lane, next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_lane_order
  ON webhook_deliveries (endpoint_id, lane, message_seq) WHERE state = 'pending';
DROP INDEX IF EXISTS webhook_deliveries_due;
DROP INDEX IF EXISTS webhook_deliveries_order;
