// POST /dashboard/api/invitations/{invitation_id}/revoke: withdraws a pending invitation
// (admin or owner of its organization; an owner invitation, an owner only).
import { invitationView, revokeInvitation } from '../../../accounts/invitations.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { invitationErrors, invitationRefusal, ofInvitation } from './schema.js';
import { invitationSchema } from './answers.js';

export const revokeInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/invitations/{invitation_id}/revoke',
  summary: 'Revokes a pending invitation',
  caller: { kind: 'org_member', role: 'admin', org: ofInvitation },
  responses: { 200: { description: 'the revoked invitation', schema: invitationSchema } },
  errors: invitationErrors,
  async handler({ params, caller }, deps: { readonly db: DbPool }) {
    try {
      return invitationView(await revokeInvitation(deps.db, caller.actor, params.invitation_id));
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
