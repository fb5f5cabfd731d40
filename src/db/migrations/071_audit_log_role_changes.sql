-- The role changes of a member, by organization and member: "made by your account recently"
-- lists a member whose role the account raised only while nobody changed it since (decision
-- 512); read through the organization's log, that question visited every entry of the window
-- (a colleague's 20,000 of the month). Role changes are few beside the log: a partial index.
CREATE INDEX dashboard_audit_log_role_changes ON dashboard_audit_log (org_id, object_id, id)
  WHERE action = 'member.change_role';
