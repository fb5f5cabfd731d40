-- The mail gw has accepted to send (decision 375): written in the transaction that issues the
-- link it carries, sent by any instance (one claims a row FOR UPDATE SKIP LOCKED and holds it
-- while it talks to the SMTP server), deleted once sent or given up.
--
-- The message itself (recipient, subject, text with its secret link) is sealed with the
-- credentials master key (AES-256-GCM, src/credentials/secret-box.ts), stored as
-- `<key id>:<iv>:<auth tag>:<ciphertext>`: nothing of it is readable here.
-- token_hash: the SHA-256 of the link's token (as dashboard_email_tokens keeps it), or null
-- for a message without a link; a message whose link was used or voided meanwhile is dropped.
-- expires_at: past it the message is dropped, never sent (its link's own expiry).
CREATE TABLE email_outbox (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  purpose         text NOT NULL CHECK (purpose IN ('verify_email', 'signup_notice', 'password_reset')),
  sealed_message  text NOT NULL,
  token_hash      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at);
