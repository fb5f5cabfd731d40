-- A signed-in user's own activity (decision 378: "Your recent activity" on the account page,
-- GET /dashboard/api/user/activity): the audit entries one user wrote, newest first.
CREATE INDEX dashboard_audit_log_user ON dashboard_audit_log (user_id, id DESC);
