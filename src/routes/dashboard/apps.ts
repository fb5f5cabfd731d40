// Apps of an organization: list (any member) and create (admin or owner).
//   GET  /dashboard/api/orgs/{org_id}/apps
//   POST /dashboard/api/orgs/{org_id}/apps   {"name"}
import { z } from 'zod';
import { appView, createAppAs, listApps } from '../../admin/apps.js';
import type { DbPool } from '../../db/pool.js';
import { pageQuerySchema } from '../../db/pages.js';
import { isGwError } from '../../errors.js';
import { sendError, sendJson } from '../../http/respond.js';
import { parsePage } from '../query.js';
import { declareRoute } from '../declaration.js';
import { displayName, pageOf } from './schemas.js';

const appSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
const inOrg = { param: 'org_id', table: 'organizations' } as const;

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

export const createAppRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/apps',
  summary: 'Creates an app in the organization',
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: z.strictObject({ name: displayName }),
  responses: { 201: { description: 'the app', schema: appSchema } },
  errors: [],
  async handler({ caller, body }, response, deps: { readonly db: DbPool }) {
    const app = await createAppAs(deps.db, { userId: caller.user.id }, caller.org.id, body.name);
    sendJson(response, 201, appView(app));
  },
});
