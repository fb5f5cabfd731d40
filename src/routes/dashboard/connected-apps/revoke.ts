// POST /dashboard/api/connected-apps/{connection_id}/revoke: a member of the paying
// organization revokes a connected app. Its token is refused by every instance within a
// second; requests already in flight settle normally. Revoking twice changes nothing.
import { revokeConnectedApp } from '../../../oauth/connected-apps.js';
import { SPENDING_ROLE } from '../../../oauth/connections.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { connectedAppSchema, ofConnectedApp } from './schema.js';

export const revokeConnectedAppRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/connected-apps/{connection_id}/revoke',
  summary: 'Revokes a connected app: its OAuth token stops working at once',
  caller: { kind: 'org_member', role: SPENDING_ROLE, org: ofConnectedApp },
  responses: { 200: { description: 'the revoked connected app', schema: connectedAppSchema } },
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    return await revokeConnectedApp(deps.db, deps.apiKeys, caller.actor, params.connection_id);
  },
});
