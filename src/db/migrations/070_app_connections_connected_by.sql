-- The OAuth approvals a dashboard user gave, by user: "made by your account recently"
-- (decision 419) read an organization's approvals of the window and kept the user's (5,001 rows
-- visited for one approval beside a colleague's 5,000); revoking a departing member's approvals
-- and the foreign key's ON DELETE SET NULL (a user deleted) scanned the same way.
CREATE INDEX app_connections_connected_by ON app_connections (connected_by_user_id, created_at)
  WHERE connected_by_user_id IS NOT NULL;
