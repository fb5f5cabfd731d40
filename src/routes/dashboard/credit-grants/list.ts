// GET /dashboard/api/product-users/{product_end_user_id}/credit-grants: the user's grants,
// revoked ones included, oldest first (any member).
import { grantFromRow } from '../../../product-users/management.js';
import { listCreditGrants } from '../../../product-users/search.js';
import { declareListRoute } from '../list-route.js';
import { ofProductUser } from '../product-users/schema.js';
import { creditGrantSchema } from './schema.js';

export const listCreditGrantsRoute = declareListRoute({
  path: '/dashboard/api/product-users/{product_end_user_id}/credit-grants',
  summary: "A product user's credit grants",
  org: ofProductUser,
  rows: 'credit grants',
  item: creditGrantSchema,
  list: listCreditGrants,
  view: grantFromRow,
});
