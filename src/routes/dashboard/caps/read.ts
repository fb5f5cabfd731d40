// GET /dashboard/api/orgs/{org_id}/cap, …/connections/{connection_id}/cap and
// …/product-users/{product_end_user_id}/cap (any member): the level's active monthly cap, or
// `cap: null` when it has none. The same reader as `gw cap show`.
import { readCap, type CapScope } from '../../../admin/caps.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { capLevels, capTargetOf } from './schema.js';
import { capStateSchema } from './answers.js';

function readCapRoute(scope: CapScope) {
  const level = capLevels[scope];
  return declareRoute({
    method: 'GET',
    path: level.path,
    summary: `The spending cap of ${level.noun} (null: none)`,
    caller: { kind: 'org_member', role: 'viewer', org: level.locator },
    responses: { 200: { description: 'the cap', schema: capStateSchema } },
    async handler({ request }, deps: { readonly db: DbPool }) {
      const state = await readCap(deps.db, capTargetOf(scope, request.params));
      if (!state) return gwError('gw_not_found', 'no such object');
      return state;
    },
  });
}

export const readOrgCapRoute = readCapRoute('org');
export const readConnectionCapRoute = readCapRoute('app_connection');
export const readProductUserCapRoute = readCapRoute('product_user');
