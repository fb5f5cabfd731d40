// The three levels a cap is set at (organization, app connection with its per-user default, one
// product user) and where their routes find their organization (the cap objects: answers.ts).
import { CapTargetError, type CapScope, type CapTarget } from '../../../admin/caps.js';
import { AmountRangeError } from '../../../money.js';
import { gwError, type GwError } from '../../../errors.js';
import { ofConnection } from '../connections/schema.js';
import { ofProductUser } from '../product-users/schema.js';
import { inOrg } from '../schemas.js';

/** Where each level's routes live and find their organization. */
export const capLevels = {
  org: { path: '/dashboard/api/orgs/{org_id}/cap', locator: inOrg, noun: 'the organization' },
  app_connection: {
    path: '/dashboard/api/connections/{connection_id}/cap',
    locator: ofConnection,
    noun: 'an app connection (and its per-user default)',
  },
  product_user: {
    path: '/dashboard/api/product-users/{product_end_user_id}/cap',
    locator: ofProductUser,
    noun: 'one product user',
  },
} as const satisfies Record<CapScope, unknown>;

/** The target a cap route's path names (the locator has checked it exists in the org). */
export function capTargetOf(scope: CapScope, params: Readonly<Record<string, string>>): CapTarget {
  const id = params[capLevels[scope].locator.param] ?? '';
  if (scope === 'org') return { scope, orgId: id };
  if (scope === 'app_connection') return { scope, appConnectionId: id };
  return { scope, productUserId: id };
}

/** A refusal of the cap service as the spec's error (anything else is a bug: rethrown). */
export function capRefusal(error: unknown): GwError {
  if (error instanceof AmountRangeError) return gwError('gw_amount_out_of_range', error.message);
  if (error instanceof CapTargetError) {
    return gwError(error.notFound ? 'gw_not_found' : 'gw_invalid_request', error.message);
  }
  throw error;
}
