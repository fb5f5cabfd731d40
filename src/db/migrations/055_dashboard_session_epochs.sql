-- A dashboard user's session epoch (docs/sessions.md, decision 360): every session records the
-- epoch its sign-in read with the password hash, and is refused once the user's epoch has moved
-- on. A password change or reset and "sign out everywhere" raise it, so every earlier session
-- ends at once on every instance, including one whose sign-in raced the change.
ALTER TABLE dashboard_users ADD COLUMN session_epoch integer NOT NULL DEFAULT 0;
