-- Usage stream entries the writer could never commit (a row Postgres refuses, or an entry that
-- is not a usage record): kept here with the reason so one bad row cannot block the others.
-- `entry` is the stream entry's fields as a JSON array of strings (JSON escapes any byte
-- Postgres text refuses). An operator replays a fixed entry and sets replayed_at
-- (docs/operations.md).
CREATE TABLE IF NOT EXISTS usage_dead_letters (
  id           bigserial PRIMARY KEY,
  stream       text NOT NULL,
  entry_id     text NOT NULL,
  request_id   text,
  org_id       text,
  reason       text NOT NULL,
  entry        text NOT NULL,
  failed_at    timestamptz NOT NULL DEFAULT now(),
  replayed_at  timestamptz,
  UNIQUE (stream, entry_id)
);
CREATE INDEX IF NOT EXISTS usage_dead_letters_request ON usage_dead_letters (request_id);
CREATE INDEX IF NOT EXISTS usage_dead_letters_open ON usage_dead_letters (failed_at)
  WHERE replayed_at IS NULL;
