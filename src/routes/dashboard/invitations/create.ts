// POST /dashboard/api/orgs/{org_id}/invitations {"email","role"}: invites an e-mail to the
// organization with a role (admin or owner; only an owner invites an owner). The answer is
// the same whether or not an account has the e-mail; its user (now or once they have an
// account) accepts or declines it once signed in. At most 100 open invitations per
// organization (409), and 200 made in any 24 hours (429 with Retry-After).
import { z } from 'zod';
import { createInvitation, invitationView } from '../../../accounts/invitations.js';
import { EMAIL_MAX_LENGTH } from '../../../accounts/users.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg, roleSchema } from '../schemas.js';
import { invitationErrors, invitationRefusal, invitationSchema } from './schema.js';

export const createInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/invitations',
  summary:
    'Invites an e-mail to the organization with a role; its user accepts or declines once signed in',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: z.strictObject({ email: z.string().max(EMAIL_MAX_LENGTH), role: roleSchema }),
  responses: { 201: { description: 'the pending invitation', schema: invitationSchema } },
  errors: [...invitationErrors, 'gw_too_many_attempts'],
  async handler({ caller, body }, deps: { readonly db: DbPool }) {
    try {
      const invitation = await createInvitation(
        deps.db,
        { ...caller.actor, role: caller.org.role },
        caller.org.id,
        body.email,
        body.role,
      );
      return invitationView(invitation);
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
