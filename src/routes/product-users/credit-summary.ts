// GET /product-users/by-external-id/credit-summary: a product user's credits in one currency.
import { z } from 'zod';
import { gwError, isGwError } from '../../errors.js';
import { DEFAULT_CURRENCY } from '../../product-users/profile.js';
import { declareRoute } from '../framework/declaration.js';
import { queryParameters } from '../framework/query.js';
import { creditsSchema } from '../schemas.js';
import {
  BASE,
  byExternalIdQuery,
  currencyCode,
  findNamedUser,
  identityErrors,
  type ProductUserRouteDeps,
} from './lookup.js';

const creditSummaryQuery = byExternalIdQuery.extend({ currency: z.string().optional() });

export const creditSummaryRoute = declareRoute({
  method: 'GET',
  path: `${BASE}/credit-summary`,
  summary: "A product user's credits in one currency (default USD)",
  caller: { kind: 'service_key', scope: 'product_users:read' },
  query: creditSummaryQuery,
  responses: { 200: { description: 'credits', schema: creditsSchema } },
  errors: [...identityErrors, 'gw_invalid_request', 'gw_product_user_not_found'],
  async handler({ request, caller }, deps: { productUsers: ProductUserRouteDeps }) {
    const query = queryParameters(request.query, creditSummaryQuery);
    if (isGwError(query)) return query;
    const currency = query.currency ?? DEFAULT_CURRENCY;
    if (!currencyCode.safeParse(currency).success) {
      return gwError('gw_invalid_request', 'currency: must be a 3-letter ISO currency code');
    }
    const user = await findNamedUser(deps.productUsers, caller, query);
    if (isGwError(user)) return user;
    return await deps.productUsers.profiles.credits(user, currency);
  },
});
