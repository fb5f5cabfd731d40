// GET /dashboard/api/orgs/{org_id}/product-users?q=: the organization's product users whose
// external id or display name starts with `q`, in pages (any member).
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { MAX_EXTERNAL_USER_ID_CHARS, storableText } from '../../../product-users/limits.js';
import { productUserListView, searchProductUsers } from '../../../product-users/search.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage, parseQuery } from '../../framework/query.js';
import { pageOf, inOrg } from '../schemas.js';
import { productUserSummarySchema } from './schema.js';

const searchQuery = pageQuerySchema.extend({
  q: storableText(MAX_EXTERNAL_USER_ID_CHARS).optional(),
});

export const searchProductUsersRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/product-users',
  summary: 'Product users whose external id or display name starts with q',
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: searchQuery,
  responses: { 200: { description: 'product users', schema: pageOf(productUserSummarySchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request, caller }, response, deps: { readonly db: DbPool }) {
    const query = parseQuery(request.query, searchQuery);
    if (isGwError(query)) return sendError(response, query);
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await searchProductUsers(deps.db, caller.org.id, query.q, page);
    sendJson(response, 200, { data: rows.map(productUserListView), next_cursor: nextCursor });
  },
});
