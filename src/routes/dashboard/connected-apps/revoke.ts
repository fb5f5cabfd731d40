// POST /dashboard/api/connected-apps/{connection_id}/revoke: a member of the paying
// organization revokes a connected app. Its token is refused by every instance within a
// second; requests already in flight settle normally. Revoking twice changes nothing.
// Connecting an app takes an admin; stopping one (which only ever spends less) a member.
import { revokeConnectedApp } from '../../../oauth/connected-apps.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofConnectedApp } from './schema.js';
import { connectedAppSchema } from './answers.js';

export const revokeConnectedAppRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/connected-apps/{connection_id}/revoke',
  summary: 'Revokes a connected app: its OAuth token stops working at once',
  caller: { kind: 'org_member', role: 'member', org: ofConnectedApp },
  responses: { 200: { description: 'the revoked connected app', schema: connectedAppSchema } },
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    return await revokeConnectedApp(deps.db, deps.apiKeys, caller.actor, params.connection_id);
  },
});
