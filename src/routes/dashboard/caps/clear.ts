// DELETE /dashboard/api/orgs/{org_id}/cap, …/connections/{connection_id}/cap and
// …/product-users/{product_end_user_id}/cap (admin or owner): removes the level's cap (the
// connection's per-user default with it); every instance stops applying it at once. Clearing
// a level without a cap answers it unchanged. The same service as `gw cap clear`.
import { clearCapAs, type CapInvalidation, type CapScope } from '../../../admin/caps.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { capLevels, capRefusal, capTargetOf } from './schema.js';
import { capStateSchema } from './answers.js';

function clearCapRoute(scope: CapScope) {
  const level = capLevels[scope];
  return declareRoute({
    method: 'DELETE',
    path: level.path,
    summary: `Removes the spending cap of ${level.noun}`,
    caller: { kind: 'org_member', role: 'admin', org: level.locator },
    responses: { 200: { description: 'the level, now without a cap', schema: capStateSchema } },
    async handler(
      { request, caller },
      deps: { readonly db: DbPool; readonly caps: CapInvalidation },
    ) {
      try {
        return await clearCapAs(
          deps.db,
          deps.caps,
          caller.actor,
          capTargetOf(scope, request.params),
        );
      } catch (error) {
        return capRefusal(error);
      }
    },
  });
}

export const clearOrgCapRoute = clearCapRoute('org');
export const clearConnectionCapRoute = clearCapRoute('app_connection');
export const clearProductUserCapRoute = clearCapRoute('product_user');
