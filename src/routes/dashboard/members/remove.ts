// DELETE /dashboard/api/orgs/{org_id}/members/{user_id}: removes a member (admin or owner; any
// member may remove themselves; the last owner cannot leave). The OAuth connections they
// approved there are revoked with it.
import { z } from 'zod';
import { removeMember } from '../../../accounts/members.js';
import type { ApiKeyInvalidation } from '../../../auth/api-key-store.js';
import type { DbPool } from '../../../db/pool.js';
import { inOrg } from '../schemas.js';
import { declareRoute } from '../../framework/declaration.js';
import { membershipErrors, membershipRefusal } from './schema.js';

export const removeMemberRoute = declareRoute({
  method: 'DELETE',
  path: '/dashboard/api/orgs/{org_id}/members/{user_id}',
  summary: 'Removes a member from the organization (or leaves it)',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'removed', schema: z.object({ removed: z.literal(true) }) } },
  errors: membershipErrors,
  async handler(
    { params, caller },
    deps: { readonly db: DbPool; readonly apiKeys: ApiKeyInvalidation },
  ) {
    try {
      await removeMember(
        deps.db,
        deps.apiKeys,
        { ...caller.actor, role: caller.org.role },
        caller.org.id,
        params.user_id,
      );
      return { removed: true };
    } catch (error) {
      return membershipRefusal(error);
    }
  },
});
