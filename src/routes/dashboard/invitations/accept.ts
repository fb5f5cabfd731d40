// POST /dashboard/api/user/invitations/{invitation_id}/accept {"token"?}: the signed-in user,
// to whose e-mail the invitation is addressed, joins its organization with its role (checked
// against the organization as it is now). Where anyone may sign up (DASHBOARD_SIGNUP), the
// invitation's accept token, which its sender passed on, is needed too (decision 365); a token
// given is checked either way. Accepting again changes nothing; an invitation to another
// e-mail, or without its token, is not found.
import { z } from 'zod';
import { acceptInvitation, invitationView } from '../../../accounts/invitations.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { invitationRefusal } from './schema.js';
import { invitationSchema } from './answers.js';

export const acceptInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/user/invitations/{invitation_id}/accept',
  summary:
    'Accepts an invitation to your e-mail: you join the organization with its role (with its accept token where anyone may sign up)',
  caller: { kind: 'session' },
  body: z.strictObject({
    token: z
      .string()
      .max(200)
      .optional()
      .describe(
        'the accept token from the invitation link; required when self-service sign-up is on',
      ),
  }),
  bodyOptional: true,
  responses: { 200: { description: 'the accepted invitation', schema: invitationSchema } },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler(
    { params, body, caller: { user } },
    deps: { readonly db: DbPool; readonly accounts: { readonly signup: boolean } },
  ) {
    try {
      const accepted = await acceptInvitation(deps.db, user, params.invitation_id, {
        token: body.token,
        tokenRequired: deps.accounts.signup,
      });
      return invitationView(accepted);
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
