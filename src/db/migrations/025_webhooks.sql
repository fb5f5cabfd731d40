-- Webhooks: an organization's endpoints, the transactional outbox of messages (written in the
-- same transaction as the change they describe), one delivery per message and endpoint with
-- its retry state, and every attempt (the delivery log). See docs/webhooks.md.

CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY,
  org_id                      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url                         text NOT NULL,
  description                 text NOT NULL DEFAULT '',
  -- the event types it receives; empty: every type
  event_types                 text[] NOT NULL DEFAULT '{}',
  status                      text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  -- manual: by a person; failing: failed for days; gone: the endpoint answered 410
  disabled_reason             text CHECK (disabled_reason IN ('manual', 'failing', 'gone')),
  disabled_at                 timestamptz,
  -- the signing secret, sealed with the credentials master key (src/webhooks/sealed-secret.ts)
  secret_sealed               text NOT NULL,
  -- after a rotation, the old secret also signs until previous_secret_expires_at
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at, id);

-- The dispatcher's side of an endpoint: locked (FOR UPDATE SKIP LOCKED) while an attempt to
-- the endpoint is in flight, so one endpoint gets one attempt at a time from all instances.
-- Apart from webhook_endpoints so that a dashboard edit never waits for an attempt.
CREATE TABLE webhook_endpoint_states (
  endpoint_id      text PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- the first failure since the last success (NULL: healthy)
  failing_since    timestamptz,
  last_attempt_at  timestamptz,
  last_success_at  timestamptz
);

-- The outbox. payload is the exact body every attempt sends (signatures cover its bytes).
CREATE TABLE webhook_messages (
  id          text PRIMARY KEY,                  -- msg_…: the webhook-id header
  seq         bigserial NOT NULL,                -- creation order (deliveries go in this order)
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  event_type  text NOT NULL,
  payload     text NOT NULL,
  -- set on events that must exist once (a threshold in a period, a replayed usage entry)
  dedupe_key  text UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_messages_created ON webhook_messages (created_at);

CREATE TABLE webhook_deliveries (
  id               bigserial PRIMARY KEY,
  message_id       text NOT NULL REFERENCES webhook_messages (id) ON DELETE CASCADE,
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_seq      bigint NOT NULL,
  state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempt_count    integer NOT NULL DEFAULT 0,
  -- the position in the retry schedule of the next failure
  retry_step       integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_attempt_at  timestamptz,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, message_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at)
  WHERE state = 'pending';
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, message_seq)
  WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_message ON webhook_deliveries (message_id);

CREATE TABLE webhook_attempts (
  id                bigserial PRIMARY KEY,
  delivery_id       bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempted_at      timestamptz NOT NULL DEFAULT now(),
  status_code       integer,                     -- NULL: no HTTP answer (see error)
  latency_ms        integer NOT NULL,
  response_snippet  text NOT NULL DEFAULT '',    -- the first bytes of the answer's body
  error             text                         -- timeout, refused address, connection error
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);

-- wallet.low_balance fires when a request takes the balance below this (NULL: never).
ALTER TABLE wallets ADD COLUMN low_balance_threshold numeric(30, 12)
  CHECK (low_balance_threshold >= 0);

-- credit_grant.expired is announced once per grant, by whichever instance's sweep gets it.
ALTER TABLE credit_grants ADD COLUMN expiry_announced_at timestamptz;
UPDATE credit_grants SET expiry_announced_at = now() WHERE expires_at <= now();
CREATE INDEX credit_grants_unannounced_expiry ON credit_grants (expires_at)
  WHERE expiry_announced_at IS NULL AND expires_at IS NOT NULL AND status = 'active';
