-- E-mail verification and password reset by e-mail (docs/sessions.md, decision 370).
--
-- email_verified_at: when the account proved it receives mail at its address (a verification
-- link, or a password-reset link, followed). Accounts that exist now are taken as verified:
-- they were made by the operator (`gw admin create-user`) or by a sign-up of a gateway that
-- sent no mail, and turning e-mail on must not lock their owners out of what they do today.
-- email_hold_until: a sign-up made while gw sends mail holds its address unverified until then
-- (24 hours); past it, a new sign-up with the address takes the account over. Null: never
-- taken over that way (the mailbox's owner can still reclaim it by a password reset).
ALTER TABLE dashboard_users
  ADD COLUMN email_verified_at timestamptz,
  ADD COLUMN email_hold_until timestamptz;
UPDATE dashboard_users SET email_verified_at = created_at;

-- Single-use secrets sent by e-mail: only their SHA-256 (hex) is kept. A token is void once
-- used, once expired, or once its account's address is no longer the one it was sent to.
CREATE TABLE dashboard_email_tokens (
  token_hash  text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
  purpose     text NOT NULL CHECK (purpose IN ('verify_email', 'password_reset')),
  email       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX dashboard_email_tokens_user ON dashboard_email_tokens (user_id, purpose);
CREATE INDEX dashboard_email_tokens_expiry ON dashboard_email_tokens (expires_at);
