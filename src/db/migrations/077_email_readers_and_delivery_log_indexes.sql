-- Mail addressed to an organization's members by their role (the webhook endpoint notices of
-- decisions 525-527, to its owners and admins) is sent only to a reader who still holds one of
-- those roles there when it is sent (decision 567): the reason they were mailed, kept beside
-- the sealed message. All three are set, or none (mail to an address for itself: a
-- verification, a password reset, a sign-up notice, which is always sent).
-- reader_org_id, reader_user_id: the membership; reader_roles: the roles it was mailed for.
-- No foreign keys: an organization or a user deleted meanwhile is a membership gone, and the
-- message is dropped when its turn comes, like one a member left.
ALTER TABLE email_outbox
  ADD COLUMN reader_org_id text,
  ADD COLUMN reader_user_id text,
  ADD COLUMN reader_roles text[],
  ADD CONSTRAINT email_outbox_reader_whole CHECK (
    (reader_org_id IS NULL) = (reader_user_id IS NULL)
    AND (reader_org_id IS NULL) = (reader_roles IS NULL));

-- An endpoint's delivery log read by status (`GET …/deliveries?status=`, `gw webhook
-- deliveries --status`), newest first, and its messages since a time (`redeliver` with
-- `since`): without these both read the endpoint's whole log (or the table) to find a few rows
-- (decision 568). On a table too large for the pause, create them beforehand CONCURRENTLY; IF
-- NOT EXISTS skips the build.
CREATE INDEX IF NOT EXISTS webhook_deliveries_log_state
  ON webhook_deliveries (endpoint_id, state, id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_created
  ON webhook_deliveries (endpoint_id, created_at);
