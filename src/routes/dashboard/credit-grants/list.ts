// GET /dashboard/api/product-users/{product_end_user_id}/credit-grants: the user's grants,
// revoked ones included, oldest first (any member).
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { grantFromRow } from '../../../product-users/management.js';
import { listCreditGrants } from '../../../product-users/search.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { ofProductUser } from '../product-users/schema.js';
import { pageOf } from '../schemas.js';
import { creditGrantSchema } from './schema.js';

export const listCreditGrantsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/product-users/{product_end_user_id}/credit-grants',
  summary: "A product user's credit grants",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: ofProductUser },
  query: pageQuerySchema,
  responses: { 200: { description: 'credit grants', schema: pageOf(creditGrantSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listCreditGrants(
      deps.db,
      request.params.product_end_user_id ?? '',
      page,
    );
    sendJson(response, 200, { data: rows.map(grantFromRow), next_cursor: nextCursor });
  },
});
