// GET /product-users/by-external-id/credit-summary: a product user's credits in one currency.
import { isGwError } from '../../errors.js';
import { DEFAULT_CURRENCY } from '../../product-users/profile.js';
import { declareRoute } from '../framework/declaration.js';
import { creditsSchema } from '../answers.js';
import {
  BASE,
  byExternalIdQuery,
  currencyCode,
  findNamedUser,
  identityErrors,
  identityFieldErrors,
  type ProductUserRouteDeps,
} from './lookup.js';

const creditSummaryQuery = byExternalIdQuery.extend({
  currency: currencyCode.optional().describe(`default ${DEFAULT_CURRENCY}`),
});

export const creditSummaryRoute = declareRoute({
  method: 'GET',
  path: `${BASE}/credit-summary`,
  summary: "A product user's credits in one currency (default USD)",
  caller: { kind: 'service_key', scope: 'product_users:read' },
  query: creditSummaryQuery,
  queryFieldErrors: identityFieldErrors,
  responses: { 200: { description: 'credits', schema: creditsSchema } },
  errors: [...identityErrors, 'gw_invalid_request', 'gw_product_user_not_found'],
  async handler({ query, caller }, deps: { productUsers: ProductUserRouteDeps }) {
    const user = await findNamedUser(deps.productUsers, caller, query);
    if (isGwError(user)) return user;
    return await deps.productUsers.profiles.credits(user, query.currency ?? DEFAULT_CURRENCY);
  },
});
