-- Core entities of the spec. Money is numeric(30,12): the wire's 12 fractional digits;
-- amounts are whole nano-units (9 digits) in practice, so Redis counters and sums agree.

CREATE TABLE organizations (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The organization wallet pays for system-route requests. Its balance is the sum of its
-- transactions minus the wallet_cost of its usage records; Redis holds the live counter.
CREATE TABLE wallets (
  org_id      text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  currency    char(3) NOT NULL DEFAULT 'USD',
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE wallet_transactions (
  id          bigserial PRIMARY KEY,
  org_id      text NOT NULL REFERENCES wallets (org_id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('topup', 'set')),
  -- signed delta applied to the balance (a 'set' records the difference it made)
  amount      numeric(30, 12) NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wallet_transactions_org ON wallet_transactions (org_id);

CREATE TABLE apps (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX apps_org ON apps (org_id);

-- An app's connection to the gateway: API keys hang off it, and it carries the settings
-- that govern its product users (attribution requirement, credit mode, overrun policy).
CREATE TABLE app_connections (
  id                     text PRIMARY KEY,
  org_id                 text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  app_id                 text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  name                   text NOT NULL,
  status                 text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  requires_product_user  boolean NOT NULL DEFAULT false,
  credit_mode            text NOT NULL DEFAULT 'enforce'
                           CHECK (credit_mode IN ('enforce', 'track_only', 'disabled')),
  overrun_policy         text NOT NULL DEFAULT 'limit_output'
                           CHECK (overrun_policy IN ('limit_output', 'reject')),
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX app_connections_app ON app_connections (app_id);

CREATE TABLE api_keys (
  id                 text PRIMARY KEY,
  org_id             text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  app_id             text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  app_connection_id  text NOT NULL REFERENCES app_connections (id) ON DELETE CASCADE,
  key_hash           text NOT NULL UNIQUE,          -- sha256 hex of the raw key
  key_hint           text NOT NULL,                 -- first characters, for humans
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  model_policy       text[] NOT NULL DEFAULT ARRAY['vendor_a/*', 'vendor_b/*'],
  created_at         timestamptz NOT NULL DEFAULT now(),
  revoked_at         timestamptz,
  last_used_at       timestamptz
);

CREATE TABLE service_keys (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  key_hash    text NOT NULL UNIQUE,
  key_hint    text NOT NULL,
  scopes      text[] NOT NULL DEFAULT ARRAY['product_users:read', 'product_users:write'],
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked', 'disabled')),
  expires_at  timestamptz,                           -- past it the key is 'expired'
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE product_users (
  id                       text PRIMARY KEY,
  org_id                   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  app_id                   text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  external_user_id         text NOT NULL,
  display_name             text NOT NULL DEFAULT '',
  email_hash               text,                     -- 'sha256:<hex>'; the e-mail is not stored
  status                   text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked')),
  metadata                 jsonb NOT NULL DEFAULT '{}'::jsonb,
  allowance_starts_at      timestamptz,
  last_app_connection_id   text REFERENCES app_connections (id) ON DELETE SET NULL,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  UNIQUE (app_id, external_user_id)
);

-- Spending caps at three scopes. A product_user cap is direct on a user; an app_connection
-- cap may also carry per_user_amount, the default cap of each user of that connection.
CREATE TABLE cap_rules (
  id                 text PRIMARY KEY,
  org_id             text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  scope              text NOT NULL CHECK (scope IN ('org', 'app_connection', 'product_user')),
  app_connection_id  text REFERENCES app_connections (id) ON DELETE CASCADE,
  product_user_id    text REFERENCES product_users (id) ON DELETE CASCADE,
  amount             numeric(30, 12) NOT NULL CHECK (amount >= 0),
  per_user_amount    numeric(30, 12) CHECK (per_user_amount >= 0),
  currency           char(3) NOT NULL DEFAULT 'USD',
  period             text NOT NULL DEFAULT 'monthly' CHECK (period IN ('monthly')),
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CHECK ((scope = 'org') = (app_connection_id IS NULL AND product_user_id IS NULL)),
  CHECK ((scope = 'app_connection') = (app_connection_id IS NOT NULL AND product_user_id IS NULL)),
  CHECK ((scope = 'product_user') = (product_user_id IS NOT NULL))
);
CREATE UNIQUE INDEX cap_rules_one_active_org ON cap_rules (org_id)
  WHERE scope = 'org' AND status = 'active';
CREATE UNIQUE INDEX cap_rules_one_active_connection ON cap_rules (app_connection_id)
  WHERE scope = 'app_connection' AND status = 'active';
CREATE UNIQUE INDEX cap_rules_one_active_user ON cap_rules (product_user_id)
  WHERE scope = 'product_user' AND status = 'active';

CREATE TABLE credit_grants (
  id                text PRIMARY KEY,
  org_id            text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  product_user_id   text NOT NULL REFERENCES product_users (id) ON DELETE CASCADE,
  amount            numeric(30, 12) NOT NULL CHECK (amount > 0),
  currency          char(3) NOT NULL DEFAULT 'USD',
  reason            text,
  idempotency_key   text,
  status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  expires_at        timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  revoked_at        timestamptz,
  UNIQUE (product_user_id, idempotency_key)
);
CREATE INDEX credit_grants_user ON credit_grants (product_user_id);

-- The model catalogue: where a model id routes and what a token costs. Prices are per token.
CREATE TABLE models (
  id                      text PRIMARY KEY,         -- '<vendor>/<model>'
  vendor                  text NOT NULL CHECK (vendor IN ('vendor_a', 'vendor_b')),
  upstream_model          text NOT NULL,            -- the vendor's own model name
  input_cost_per_token    numeric(30, 18) NOT NULL,  -- what the vendor charges
  output_cost_per_token   numeric(30, 18) NOT NULL,
  input_price_per_token   numeric(30, 18) NOT NULL,  -- what gw sells it for (sell_cost)
  output_price_per_token  numeric(30, 18) NOT NULL,
  max_output_tokens       integer NOT NULL CHECK (max_output_tokens > 0),
  supports_tools          boolean NOT NULL DEFAULT true,
  enabled                 boolean NOT NULL DEFAULT true,
  created_at              timestamptz NOT NULL DEFAULT now()
);

INSERT INTO models (id, vendor, upstream_model, input_cost_per_token, output_cost_per_token,
                    input_price_per_token, output_price_per_token, max_output_tokens) VALUES
  ('vendor_b/gpt-4o-mini', 'vendor_b', 'gpt-4o-mini', 0.00000015, 0.0000006, 0.00000015, 0.0000006, 16384),
  ('vendor_b/gpt-4o', 'vendor_b', 'gpt-4o', 0.0000025, 0.00001, 0.0000025, 0.00001, 16384),
  ('vendor_a/claude-haiku-4-5', 'vendor_a', 'claude-haiku-4-5', 0.000001, 0.000005, 0.000001, 0.000005, 8192),
  ('vendor_a/claude-sonnet-4-5', 'vendor_a', 'claude-sonnet-4-5', 0.000003, 0.000015, 0.000003, 0.000015, 8192);

-- The usage ledger: one row per request that reached reservation, written by the batch
-- writer from the Redis stream. Partitioned by month; the primary key must contain the
-- partition key, so it is (request_id, created_at) — created_at is fixed at settle time and
-- travels in the stream entry, so a replayed entry conflicts with its first insert.
CREATE TABLE usage_records (
  request_id         uuid NOT NULL,
  created_at         timestamptz NOT NULL,
  org_id             text NOT NULL,
  app_id             text NOT NULL,
  app_connection_id  text NOT NULL,
  api_key_id         text NOT NULL,
  product_user_id    text,
  model              text NOT NULL,
  vendor             text NOT NULL,
  route              text NOT NULL,              -- 'system' or 'byok'
  credential_id      text,                       -- the BYOK credential that served it
  stream             boolean NOT NULL,
  status             text NOT NULL,              -- completed | incomplete | upstream_error | client_aborted
  upstream_status    integer,
  input_tokens       integer NOT NULL,
  output_tokens      integer NOT NULL,
  total_tokens       integer NOT NULL,
  currency           char(3) NOT NULL,
  sell_cost          numeric(30, 12) NOT NULL,   -- charged against caps and allowances
  vendor_cost        numeric(30, 12) NOT NULL,   -- what the vendor charges (margin analytics)
  wallet_cost        numeric(30, 12) NOT NULL,   -- taken from the org wallet
  reserved_amount    numeric(30, 12) NOT NULL,   -- the estimate held while it ran
  latency_ms         integer NOT NULL,
  PRIMARY KEY (request_id, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE usage_records_default PARTITION OF usage_records DEFAULT;
CREATE INDEX usage_records_org_time ON usage_records (org_id, created_at);
CREATE INDEX usage_records_user_time ON usage_records (product_user_id, created_at);
CREATE INDEX usage_records_key_time ON usage_records (api_key_id, created_at);

-- Creates the month's partition if missing (the writer calls it for each month it sees).
CREATE FUNCTION gw_ensure_usage_partition(month_start date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  partition_name text := format('usage_records_%s', to_char(month_start, 'YYYY_MM'));
BEGIN
  IF to_regclass(partition_name) IS NULL THEN
    EXECUTE format(
      'CREATE TABLE IF NOT EXISTS %I PARTITION OF usage_records FOR VALUES FROM (%L) TO (%L)',
      partition_name, month_start, (month_start + interval '1 month')::date);
  END IF;
END $$;
