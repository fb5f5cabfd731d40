-- Idempotency-Key on the dashboard's create routes (decision 372): one row per key an
-- organization sent to a route, kept 24 hours. `running` while the first request runs (a
-- second one with the key is refused, never run), `done` with the first answer once it
-- succeeded (replayed to the same request), `failed` when it ended in an internal error whose
-- effect is unknown (refused, never run again). A request refused with a 4xx changed nothing
-- and leaves no row.
-- request_hash: SHA-256 (hex) of the request's path and canonical JSON body: the same key with
-- another request is refused (gw_idempotency_key_reused).
-- answer_sealed: the answer's JSON sealed with the credentials master key
-- (`<key id>:<iv>:<auth tag>:<ciphertext>`, as webhook signing secrets); answer_clear: the
-- answer when no master key is configured, only for routes whose answer holds no secret.
-- Secret-holding answers are never stored in the clear (neither column: not replayed).
CREATE TABLE idempotency_keys (
  org_id        text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  route         text NOT NULL,
  key           text NOT NULL,
  request_hash  text NOT NULL,
  state         text NOT NULL CHECK (state IN ('running', 'done', 'failed')),
  status        smallint,
  answer_sealed text,
  answer_clear  jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (org_id, route, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
