-- Bring your own key: an organization's vendor API keys, encrypted at rest (AES-256-GCM under a
-- master key from the environment; key_id names which one, so the master key can rotate).

CREATE TABLE provider_credentials (
  id            text PRIMARY KEY,
  org_id        text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  provider      text NOT NULL CHECK (provider IN ('vendor_a', 'vendor_b')),
  secret_kind   text NOT NULL DEFAULT 'api_key' CHECK (secret_kind IN ('api_key')),
  name          text NOT NULL,
  model_policy  text[] NOT NULL,
  routing_mode  text NOT NULL DEFAULT 'byok_first' CHECK (routing_mode IN ('byok_first', 'byok_only')),
  priority      integer NOT NULL DEFAULT 1 CHECK (priority >= 1),
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'deleted')),
  key_id        text NOT NULL,
  iv            bytea NOT NULL,
  ciphertext    bytea NOT NULL,
  auth_tag      bytea NOT NULL,
  fingerprint   text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_credentials_org ON provider_credentials (org_id) WHERE status <> 'deleted';

-- Which app connections may use a credential.
CREATE TABLE provider_credential_grants (
  credential_id      text NOT NULL REFERENCES provider_credentials (id) ON DELETE CASCADE,
  app_connection_id  text NOT NULL REFERENCES app_connections (id) ON DELETE CASCADE,
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (credential_id, app_connection_id)
);
CREATE INDEX provider_credential_grants_connection ON provider_credential_grants (app_connection_id);
