-- Mail to an organization's owners and admins about its webhook endpoints (decisions 525-527):
-- when the dispatcher disables one (a 410, or failing for WEBHOOK_DISABLE_AFTER_S), and when
-- one has failed for a day. Queued in the e-mail outbox in the transaction of the attempt that
-- disables it or finds it failing that long.
ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_purpose_check;
ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_purpose_check
  CHECK (purpose IN ('verify_email', 'signup_notice', 'password_reset', 'webhook_disabled',
                     'webhook_failing'));

-- disable_notice_at: when the endpoint's owners and admins were last mailed that gw disabled
-- it; a disable within the hour after that one is not mailed again (an endpoint enabled and
-- disabled in a loop would otherwise mail them at every turn; decision 526). Null: never.
-- failing_notice_for: the failing_since (webhook_endpoint_states) they were warned about: one
-- warning per run of failures (decision 527). Null: none.
ALTER TABLE webhook_endpoints
  ADD COLUMN disable_notice_at timestamptz,
  ADD COLUMN failing_notice_for timestamptz;
