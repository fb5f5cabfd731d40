// POST /dashboard/api/user/invitations/{invitation_id}/decline: the signed-in user, to whose
// e-mail the invitation is addressed, turns it down. Declining again changes nothing; an
// invitation to another e-mail is not found.
import { declineInvitation, invitationView } from '../../../accounts/invitations.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { invitationRefusal } from './schema.js';
import { invitationSchema } from './answers.js';

export const declineInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/user/invitations/{invitation_id}/decline',
  summary: 'Declines an invitation to your e-mail',
  caller: { kind: 'session' },
  responses: { 200: { description: 'the declined invitation', schema: invitationSchema } },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller: { user } }, deps: { readonly db: DbPool }) {
    try {
      return invitationView(await declineInvitation(deps.db, user, params.invitation_id));
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
