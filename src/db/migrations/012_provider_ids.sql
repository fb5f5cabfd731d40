-- The provider registry (src/providers/registry.ts) is where vendors are listed: a vendor is one
-- folder and one line there, not a schema change. The columns keep only the id's shape (the
-- same rule as defineProvider); a row whose vendor no provider serves is left out of the
-- catalogue, and a credential's provider is checked against the registry by the CLI.
ALTER TABLE models DROP CONSTRAINT models_vendor_check;
ALTER TABLE models ADD CONSTRAINT models_vendor_check CHECK (vendor ~ '^[a-z][a-z0-9_]{0,31}$');
ALTER TABLE provider_credentials DROP CONSTRAINT provider_credentials_provider_check;
ALTER TABLE provider_credentials
  ADD CONSTRAINT provider_credentials_provider_check CHECK (provider ~ '^[a-z][a-z0-9_]{0,31}$');
