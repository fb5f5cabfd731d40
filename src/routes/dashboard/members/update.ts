// PATCH /dashboard/api/orgs/{org_id}/members/{user_id} {"role"}: changes a member's role
// (admin or owner; only an owner makes or unmakes an owner; an owner always remains). Below
// admin, the OAuth connections they approved there are revoked with it.
import { z } from 'zod';
import { changeRole, memberView } from '../../../accounts/members.js';
import type { ApiKeyInvalidation } from '../../../auth/api-key-store.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { roleSchema } from '../answers.js';
import { membershipErrors, membershipRefusal } from './schema.js';
import { memberSchema } from './answers.js';

export const changeMemberRoleRoute = declareRoute({
  method: 'PATCH',
  path: '/dashboard/api/orgs/{org_id}/members/{user_id}',
  summary: "Changes a member's role",
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: z.strictObject({ role: roleSchema }),
  responses: { 200: { description: 'the member', schema: memberSchema } },
  errors: membershipErrors,
  async handler(
    { params, caller, body },
    deps: { readonly db: DbPool; readonly apiKeys: ApiKeyInvalidation },
  ) {
    try {
      const member = await changeRole(
        deps.db,
        deps.apiKeys,
        { ...caller.actor, role: caller.org.role },
        caller.org.id,
        params.user_id,
        body.role,
      );
      return memberView(member);
    } catch (error) {
      return membershipRefusal(error);
    }
  },
});
