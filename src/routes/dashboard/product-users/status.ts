// POST /dashboard/api/product-users/{product_end_user_id}/block and /unblock (admin or owner):
// the spec's dashboard-only status change. The same service as `gw product-user block`
// changes it and tells every instance's product-user cache, so inference sees it at once.
import { productUserById } from '../../../product-users/search.js';
import { declareRoute } from '../../framework/declaration.js';
import type { ProductUserRouteDeps } from '../../product-users/lookup.js';
import { productUserSchema } from '../../answers.js';
import { ofProductUser } from './schema.js';

function statusRoute(verb: 'block' | 'unblock', status: 'blocked' | 'active') {
  return declareRoute({
    method: 'POST',
    path: `/dashboard/api/product-users/{product_end_user_id}/${verb}`,
    summary:
      verb === 'block'
        ? 'Blocks a product user: their requests are refused whatever their balance'
        : 'Unblocks a product user',
    caller: { kind: 'org_member', role: 'admin', org: ofProductUser },
    responses: { 200: { description: 'the product user', schema: productUserSchema } },
    async handler({ params, caller }, deps: { readonly productUsers: ProductUserRouteDeps }) {
      const { db, management, profiles } = deps.productUsers;
      const user = (await productUserById(db, params.product_end_user_id))!;
      await management.setStatus(
        user.org_id,
        user.app_id,
        user.external_user_id,
        status,
        caller.actor,
      );
      return await profiles.profile({ ...user, status });
    },
  });
}

export const blockProductUserRoute = statusRoute('block', 'blocked');
export const unblockProductUserRoute = statusRoute('unblock', 'active');
