// POST /dashboard/api/orgs/{org_id}/members {"email","role"}: adds an existing dashboard user
// (admin or owner; only an owner adds an owner).
import { z } from 'zod';
import { addMember, memberView } from '../../../accounts/members.js';
import { EMAIL_MAX_LENGTH } from '../../../accounts/users.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { roleSchema, inOrg } from '../schemas.js';
import { memberSchema, membershipErrors, membershipRefusal } from './schema.js';

export const addMemberRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/members',
  summary: 'Adds an existing dashboard user to the organization by e-mail',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: z.strictObject({ email: z.string().max(EMAIL_MAX_LENGTH), role: roleSchema }),
  responses: { 201: { description: 'the new member', schema: memberSchema } },
  errors: membershipErrors,
  async handler({ caller, body }, deps: { readonly db: DbPool }) {
    try {
      const member = await addMember(
        deps.db,
        { ...caller.actor, role: caller.org.role },
        caller.org.id,
        body.email,
        body.role,
      );
      return memberView(member);
    } catch (error) {
      return membershipRefusal(error);
    }
  },
});
