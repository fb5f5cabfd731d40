-- A product user is one (organization, app, external id): an app's customers as seen by the
-- organization that pays for them. With OAuth connections an app's requests can be paid by
-- many organizations (each connecting user's), and the users they attribute belong to the
-- paying organization, never to the app's owner or to another payer (docs/oauth.md).
-- Rows that exist are unchanged: until now every product user was in its app's organization.
ALTER TABLE product_users DROP CONSTRAINT IF EXISTS product_users_app_id_external_user_id_key;
ALTER TABLE product_users
  ADD CONSTRAINT product_users_org_app_external_key UNIQUE (org_id, app_id, external_user_id);
