-- The latest allowance anchor ever stored for a product user. A new anchor may not be older
-- than it (SPEC: "cannot be older than the stored anchor"), even after the anchor was set to
-- null (calendar periods) in between: otherwise null, then an older anchor, would move a
-- period's start back and grant its allowance again (decision 280).
ALTER TABLE product_users ADD COLUMN IF NOT EXISTS allowance_anchor_floor timestamptz;
UPDATE product_users SET allowance_anchor_floor = allowance_starts_at
 WHERE allowance_anchor_floor IS NULL AND allowance_starts_at IS NOT NULL;
