-- OAuth connections (docs/oauth.md). An OAuth client belongs to an app (and the app's
-- organization); a confidential client has a secret, stored as its SHA-256 only. A user's
-- approval creates an app connection of the app in the organization the user chose to pay:
-- app_connections.org_id is the paying organization, oauth_client_id the client it was made
-- through. The inference token the app receives is an api_keys row of kind 'oauth_token' on
-- that connection, so it is authenticated, cached and revoked exactly like an API key.
CREATE TABLE oauth_clients (
  id                  text PRIMARY KEY,                 -- the client_id, gw_client_…
  org_id              text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  app_id              text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  name                text NOT NULL,
  client_secret_hash  text,                             -- sha256 hex; NULL: a public client
  client_secret_hint  text,
  redirect_uris       text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 10),
  status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleted')),
  created_at          timestamptz NOT NULL DEFAULT now(),
  deleted_at          timestamptz
);
CREATE INDEX oauth_clients_app_created ON oauth_clients (app_id, created_at, id);

ALTER TABLE app_connections
  ADD COLUMN oauth_client_id       text REFERENCES oauth_clients (id) ON DELETE SET NULL,
  ADD COLUMN connected_by_user_id  text REFERENCES dashboard_users (id) ON DELETE SET NULL,
  ADD COLUMN revoked_at            timestamptz;
-- The paying organization's connected apps, in list order; and a client's connections.
CREATE INDEX app_connections_oauth_org ON app_connections (org_id, created_at, id)
  WHERE oauth_client_id IS NOT NULL;
CREATE INDEX app_connections_oauth_client ON app_connections (oauth_client_id)
  WHERE oauth_client_id IS NOT NULL;

ALTER TABLE api_keys
  ADD COLUMN kind text NOT NULL DEFAULT 'api_key' CHECK (kind IN ('api_key', 'oauth_token'));

-- Usage records name the OAuth client a request came through (NULL: an API key's request).
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS oauth_client_id text;
