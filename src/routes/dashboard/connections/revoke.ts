// DELETE /dashboard/api/connections/{connection_id}: revokes a connection (admin or owner). Its
// API keys stop working on every instance at once; the row stays for the ledger's sake.
import { connectionView, revokeConnectionAs } from '../../../admin/connections.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofConnection } from './schema.js';
import { connectionSchema } from './answers.js';

export const revokeConnectionRoute = declareRoute({
  method: 'DELETE',
  path: '/dashboard/api/connections/{connection_id}',
  summary: 'Revokes a connection: its API keys stop working at once',
  caller: { kind: 'org_member', role: 'admin', org: ofConnection },
  responses: { 200: { description: 'the revoked connection', schema: connectionSchema } },
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    const connection = await revokeConnectionAs(deps.db, deps.apiKeys, caller.actor, {
      orgId: caller.org.id,
      id: params.connection_id,
    });
    return connectionView(connection);
  },
});
