-- The password reset (by e-mailed link) whose review the account has not yet read or
-- dismissed: every browser the account signs in to shows a banner leading to "made by your
-- account recently" until then (decision 513). Null: nothing to review.
ALTER TABLE dashboard_users ADD COLUMN review_after_reset_at timestamptz;
