// GET /dashboard/api/apps/{app_id}/connections: the app's connections (any member).
import { connectionView, listConnections } from '../../../admin/connections.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { pageOf } from '../schemas.js';
import { connectionSchema, ofApp } from './schema.js';

export const listConnectionsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/apps/{app_id}/connections',
  summary: "The app's connections and their settings",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: ofApp },
  query: pageQuerySchema,
  responses: { 200: { description: 'connections', schema: pageOf(connectionSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listConnections(deps.db, request.params.app_id ?? '', page);
    sendJson(response, 200, { data: rows.map(connectionView), next_cursor: nextCursor });
  },
});
