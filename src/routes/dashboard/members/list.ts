// GET /dashboard/api/orgs/{org_id}/members: the organization's members and roles (any member).
import { listMembers, memberView } from '../../../accounts/members.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { pageOf, inOrg } from '../schemas.js';
import { memberSchema } from './schema.js';

export const listMembersRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/members',
  summary: "The organization's members and their roles",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'members', schema: pageOf(memberSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request, caller }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listMembers(deps.db, caller.org.id, page);
    sendJson(response, 200, { data: rows.map(memberView), next_cursor: nextCursor });
  },
});
