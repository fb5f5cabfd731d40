// PATCH /dashboard/api/connections/{connection_id}: renames a connection or changes its credit
// mode, overrun policy or attribution requirement (admin or owner); its keys see it at once.
import { connectionView, updateConnectionAs } from '../../../admin/connections.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { connectionSettingsSchema, ofConnection } from './schema.js';
import { connectionSchema } from './answers.js';

export const updateConnectionRoute = declareRoute({
  method: 'PATCH',
  path: '/dashboard/api/connections/{connection_id}',
  summary: 'Renames a connection or changes its settings',
  caller: { kind: 'org_member', role: 'admin', org: ofConnection },
  body: connectionSettingsSchema,
  responses: { 200: { description: 'the connection', schema: connectionSchema } },
  async handler({ params, caller, body }, deps: KeyRevokingDeps) {
    const connection = await updateConnectionAs(
      deps.db,
      deps.apiKeys,
      caller.actor,
      { orgId: caller.org.id, id: params.connection_id },
      body,
    );
    return connectionView(connection);
  },
});
