// GET /product-users/by-external-id: a product user's profile (never creates one).
import { isGwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import { productUserSchema } from '../answers.js';
import {
  BASE,
  byExternalIdQuery,
  findNamedUser,
  identityErrors,
  identityFieldErrors,
  type ProductUserRouteDeps,
} from './lookup.js';

export const getProductUserRoute = declareRoute({
  method: 'GET',
  path: BASE,
  summary: "A product user's profile: allowance, cap, credits, usage (never creates one)",
  caller: { kind: 'service_key', scope: 'product_users:read' },
  query: byExternalIdQuery,
  queryFieldErrors: identityFieldErrors,
  answerCarriesSecret: true,
  responses: { 200: { description: 'the product user', schema: productUserSchema } },
  errors: [...identityErrors, 'gw_product_user_not_found'],
  async handler({ query, caller }, deps: { productUsers: ProductUserRouteDeps }) {
    const user = await findNamedUser(deps.productUsers, caller, query);
    if (isGwError(user)) return user;
    return await deps.productUsers.profiles.profile(user);
  },
});
