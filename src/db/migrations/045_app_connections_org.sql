-- An organization's connections across its apps, in list order: the dashboard's connection
-- pickers page and search them, and the overview counts them, without reading every app.
CREATE INDEX app_connections_org_created ON app_connections (org_id, created_at, id);
