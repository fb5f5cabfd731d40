-- An invitation's accept token (docs/decisions.md 365): the SHA-256 (hex) of a secret answered
-- once to whoever made it, who passes it on (an invitation link). With self-service sign-up on,
-- acceptance needs it, since nobody proves they own an e-mail. Null for invitations made before
-- this migration: those cannot be accepted while sign-up is on.
ALTER TABLE org_invitations ADD COLUMN accept_token_hash text;
