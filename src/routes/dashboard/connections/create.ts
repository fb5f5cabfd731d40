// POST /dashboard/api/apps/{app_id}/connections {"name", settings…}: a new connection of the
// app (admin or owner). Settings default to enforce / limit_output / attribution optional.
import { connectionView, createConnectionAs } from '../../../admin/connections.js';
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { displayName } from '../schemas.js';
import { connectionSettingsSchema, ofApp } from './schema.js';
import { connectionSchema } from './answers.js';

export const createConnectionRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/apps/{app_id}/connections',
  summary: 'Creates a connection of the app',
  caller: { kind: 'org_member', role: 'admin', org: ofApp },
  idempotent: true,
  body: connectionSettingsSchema.extend({ name: displayName }),
  responses: { 201: { description: 'the connection', schema: connectionSchema } },
  errors: ['gw_conflict'],
  async handler({ params, caller, body }, deps: { readonly db: DbPool }) {
    const connection = await createConnectionAs(
      deps.db,
      caller.actor,
      { orgId: caller.org.id, appId: params.app_id },
      body,
    );
    if (isGwError(connection)) return connection;
    return connectionView(connection);
  },
});
