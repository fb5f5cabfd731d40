// POST /dashboard/api/credit-grants/{grant_id}/revoke (admin or owner): what is left of the
// grant can no longer be spent. The same service as `gw credits revoke` takes the grant's
// remaining credits out of the live balance, so the profile and inference see it at once.
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { productUserById } from '../../../product-users/search.js';
import { declareRoute } from '../../framework/declaration.js';
import type { ProductUserRouteDeps } from '../../product-users/lookup.js';
import { creditGrantWithCreditsSchema, ofCreditGrant } from './schema.js';

export const revokeCreditGrantRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/credit-grants/{grant_id}/revoke',
  summary: 'Revokes a credit grant: what is left of it can no longer be spent',
  caller: { kind: 'org_member', role: 'admin', org: ofCreditGrant },
  responses: { 200: { description: 'the revoked grant', schema: creditGrantWithCreditsSchema } },
  errors: ['gw_conflict'],
  async handler(
    { params, caller },
    deps: { readonly db: DbPool; readonly productUsers: ProductUserRouteDeps },
  ) {
    // A grant of the organization the caller's role was checked in, never another's.
    const grant = await deps.productUsers.management.revokeGrant(
      params.grant_id,
      caller.actor,
      caller.org.id,
    );
    // Revoked already (409), in the words `gw credits revoke` uses too.
    if (isGwError(grant)) return grant;
    const user = (await productUserById(deps.db, grant.product_end_user_id))!;
    return deps.productUsers.profiles.withCredits(user, grant);
  },
});
