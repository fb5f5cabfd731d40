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
  // A PATCH that names nothing changes nothing: refused, as a credential's and a key's are,
  // rather than audited as an update (decision 584).
  body: connectionSettingsSchema.refine(
    (body) => Object.keys(body).length > 0,
    'name at least one field to change',
  ),
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
