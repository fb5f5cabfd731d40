-- A user's own activity (decision 378, GET /dashboard/api/user/activity) reads, for each
-- organization the user is a member of now, that membership's newest entries (decision 386).
-- 065's index (user_id, id) made a page read every entry the user wrote in organizations they
-- have left before it found one in an organization they are in (measured: 2.4 s for a user
-- with 500,000 entries in an organization they left, on a log of 1.5 million), and let the
-- planner scan the whole log newest first looking for a user whose entries are old.
CREATE INDEX dashboard_audit_log_user_org ON dashboard_audit_log (user_id, org_id, id DESC);
DROP INDEX dashboard_audit_log_user;
