-- Allowance settings on a direct product-user cap (NULL: inherit the connection's), and the
-- ledger of which credit grant paid how much of which request.

ALTER TABLE cap_rules
  ADD COLUMN credit_mode text CHECK (credit_mode IN ('enforce', 'track_only', 'disabled')),
  ADD COLUMN overrun_policy text CHECK (overrun_policy IN ('limit_output', 'reject'));

CREATE TABLE credit_consumptions (
  request_id   uuid NOT NULL,
  grant_id     text NOT NULL REFERENCES credit_grants (id) ON DELETE CASCADE,
  amount       numeric(30, 12) NOT NULL CHECK (amount > 0),
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (request_id, grant_id)
);
CREATE INDEX credit_consumptions_grant ON credit_consumptions (grant_id);

ALTER TABLE usage_records ADD COLUMN credits_cost numeric(30, 12) NOT NULL DEFAULT 0;
