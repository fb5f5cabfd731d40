-- Apps are deleted softly: usage, product users and the audit log keep naming them. A deleted
-- app's connections are revoked and its API keys stop working (src/admin/apps.ts); it leaves
-- the dashboard's app list, and nothing new can be made under it.
ALTER TABLE apps
  ADD COLUMN status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleted')),
  ADD COLUMN deleted_at timestamptz;
CREATE INDEX apps_org_created ON apps (org_id, created_at, id);
