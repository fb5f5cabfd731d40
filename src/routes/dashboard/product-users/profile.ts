// GET /dashboard/api/product-users/{product_end_user_id}: the spec's profile object of one
// product user (any member): allowance, cap, credits and usage, from the live balances.
import { productUserById } from '../../../product-users/search.js';
import { declareRoute } from '../../framework/declaration.js';
import type { ProductUserRouteDeps } from '../../product-users/lookup.js';
import { productUserSchema } from '../../answers.js';
import { ofProductUser } from './schema.js';

export const productUserProfileRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/product-users/{product_end_user_id}',
  summary: "A product user's profile: allowance, cap, credits, usage",
  caller: { kind: 'org_member', role: 'viewer', org: ofProductUser },
  answerCarriesSecret: true,
  responses: { 200: { description: 'the product user', schema: productUserSchema } },
  async handler({ params }, deps: { readonly productUsers: ProductUserRouteDeps }) {
    const { db, profiles } = deps.productUsers;
    // The caller check found the user in the caller's organization.
    const user = (await productUserById(db, params.product_end_user_id))!;
    return await profiles.profile(user);
  },
});
