// GET /dashboard/api/orgs/{org_id}/product-users?q=: the organization's product users whose
// external id or display name starts with `q`, in pages (any member).
import { pageQuerySchema } from '../../../db/pages.js';
import { MAX_EXTERNAL_USER_ID_CHARS, storableText } from '../../../product-users/limits.js';
import { productUserListView, searchProductUsers } from '../../../product-users/search.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { productUserSummarySchema } from './answers.js';

const searchQuery = pageQuerySchema.extend({
  q: storableText(MAX_EXTERNAL_USER_ID_CHARS).optional(),
});

export const searchProductUsersRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/product-users',
  summary: 'Product users whose external id or display name starts with q',
  org: inOrg,
  rows: 'product users',
  item: productUserSummarySchema,
  query: searchQuery,
  list: (db, orgId, page, query) => searchProductUsers(db, orgId, query.q, page),
  view: productUserListView,
});
