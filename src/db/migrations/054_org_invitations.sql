-- Invitations to join an organization (docs/decisions.md 359): an admin invites an e-mail
-- with a role; the user with that e-mail (now or once they have an account) accepts or
-- declines. Nothing about the invitation says whether such a user exists.
CREATE TABLE org_invitations (
  id            text PRIMARY KEY,
  org_id        text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  email         text NOT NULL,                 -- trimmed and lower-cased, as dashboard_users'
  role          text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
  invited_by    text NOT NULL,                 -- the inviting user's id
  status        text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  responded_at  timestamptz,                   -- accepted, declined, revoked (or found expired)
  responded_by  text                           -- who accepted, declined or revoked it
);
-- One open invitation per organization and e-mail; an expired one is closed before another.
CREATE UNIQUE INDEX org_invitations_open ON org_invitations (org_id, email)
  WHERE status = 'pending';
-- A user's own invitations, and an organization's recent ones (its daily bound).
CREATE INDEX org_invitations_email ON org_invitations (email, created_at) WHERE status = 'pending';
CREATE INDEX org_invitations_org ON org_invitations (org_id, created_at);

-- A user's personal organization is theirs for good: they stay its owner (decision 359).
-- Repair the users whom an earlier gateway let lose it (removed by a second owner, or demoted).
UPDATE org_memberships m SET role = 'owner'
  FROM dashboard_users u
 WHERE u.id = m.user_id AND u.personal_org_id = m.org_id AND m.role <> 'owner';
INSERT INTO org_memberships (org_id, user_id, role)
SELECT u.personal_org_id, u.id, 'owner' FROM dashboard_users u
 WHERE NOT EXISTS (SELECT 1 FROM org_memberships m
                    WHERE m.org_id = u.personal_org_id AND m.user_id = u.id);

-- And Postgres refuses, whatever the caller, to remove or demote a user in their personal
-- organization (the members service refuses first, with a clear answer). Deleting the user
-- takes their memberships with them (their row is gone by then, so nothing matches here).
CREATE FUNCTION org_memberships_keep_personal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM dashboard_users
              WHERE id = OLD.user_id AND personal_org_id = OLD.org_id)
     AND (TG_OP = 'DELETE' OR NEW.role <> 'owner'
          OR NEW.org_id <> OLD.org_id OR NEW.user_id <> OLD.user_id) THEN
    RAISE EXCEPTION 'a user stays the owner of their personal organization'
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$;
CREATE TRIGGER org_memberships_keep_personal BEFORE DELETE OR UPDATE ON org_memberships
  FOR EACH ROW EXECUTE FUNCTION org_memberships_keep_personal();
