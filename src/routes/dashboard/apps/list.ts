// GET /dashboard/api/orgs/{org_id}/apps: the organization's apps, oldest first (any member).
import { appView, listApps } from '../../../admin/apps.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { pageOf, inOrg } from '../schemas.js';
import { appSchema } from './schema.js';

export const listAppsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/apps',
  summary: "The organization's apps, oldest first",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'apps', schema: pageOf(appSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request, caller }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listApps(deps.db, caller.org.id, page);
    sendJson(response, 200, { data: rows.map(appView), next_cursor: nextCursor });
  },
});
