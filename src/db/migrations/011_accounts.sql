-- Dashboard accounts: people with an e-mail and a password, members of organizations with a
-- role. Every user has a personal organization (with its wallet) that they own.

CREATE TABLE dashboard_users (
  id               text PRIMARY KEY,
  email            text NOT NULL,                 -- trimmed and lower-cased
  password_hash    text NOT NULL,                 -- scrypt, see src/accounts/passwords.ts
  personal_org_id  text NOT NULL REFERENCES organizations (id),
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dashboard_users_email ON dashboard_users (email);

CREATE TABLE org_memberships (
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id     text NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_memberships_user ON org_memberships (user_id);

-- Every dashboard write: who did what to which object, when. Read per organization.
CREATE TABLE dashboard_audit_log (
  id           bigserial PRIMARY KEY,
  org_id       text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id      text NOT NULL,
  action       text NOT NULL,                     -- e.g. 'app.create'
  object_type  text NOT NULL,
  object_id    text NOT NULL,
  details      jsonb NOT NULL DEFAULT '{}',       -- never secrets
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_audit_log_org ON dashboard_audit_log (org_id, created_at DESC, id DESC);
