-- An app-connection cap rule may set only the per-user default (amount null: the connection's
-- combined usage is not capped). Org and product-user rules always have an amount, and a
-- connection rule has at least one of the two.
ALTER TABLE cap_rules ALTER COLUMN amount DROP NOT NULL;
ALTER TABLE cap_rules ADD CONSTRAINT cap_rules_amount_present CHECK (
  CASE WHEN scope = 'app_connection' THEN amount IS NOT NULL OR per_user_amount IS NOT NULL
       ELSE amount IS NOT NULL END
);
