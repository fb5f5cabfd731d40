-- Who made a wallet transaction (a dashboard user's id, or 'cli'; null for those made before
-- this column and by the seed), and the index the dashboard's top-up history pages by.
ALTER TABLE wallet_transactions ADD COLUMN created_by text;
CREATE INDEX wallet_transactions_org_created ON wallet_transactions (org_id, created_at, id);
