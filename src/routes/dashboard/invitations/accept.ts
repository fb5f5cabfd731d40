// POST /dashboard/api/user/invitations/{invitation_id}/accept: the signed-in user, to whose
// e-mail the invitation is addressed, joins its organization with its role (checked against
// the organization as it is now). Accepting again changes nothing; an invitation to another
// e-mail is not found.
import { acceptInvitation, invitationView } from '../../../accounts/invitations.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { invitationRefusal, invitationSchema } from './schema.js';

export const acceptInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/user/invitations/{invitation_id}/accept',
  summary: 'Accepts an invitation to your e-mail: you join the organization with its role',
  caller: { kind: 'session' },
  responses: { 200: { description: 'the accepted invitation', schema: invitationSchema } },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller: { user } }, deps: { readonly db: DbPool }) {
    try {
      return invitationView(await acceptInvitation(deps.db, user, params.invitation_id));
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
