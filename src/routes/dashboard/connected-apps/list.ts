// GET /dashboard/api/orgs/{org_id}/connected-apps: the apps users connected to this
// organization's wallet by OAuth, with their spend (any member).
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { listConnectedApps } from '../../../oauth/connections.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { inOrg, pageOf } from '../schemas.js';
import { connectedAppSchema } from './schema.js';

export const listConnectedAppsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/connected-apps',
  summary: "Apps connected by OAuth that this organization's wallet pays for, with their spend",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'connected apps', schema: pageOf(connectedAppSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { data, nextCursor } = await listConnectedApps(
      deps.db,
      request.params.org_id ?? '',
      page,
    );
    sendJson(response, 200, { data, next_cursor: nextCursor });
  },
});
