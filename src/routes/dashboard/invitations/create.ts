// POST /dashboard/api/orgs/{org_id}/invitations {"email","role"}: invites an e-mail to the
// organization with a role (admin or owner; only an owner invites an owner). The answer is
// the same whether or not an account has the e-mail; its user (now or once they have an
// account) accepts or declines it once signed in. The answer carries the invitation's accept
// token and link, once: the inviter passes the link on, and where anyone may sign up
// accepting needs it (decision 365). At most 100 open invitations per organization (409),
// and 200 made in any 24 hours (429 with Retry-After).
import { z } from 'zod';
import { createInvitation, invitationView } from '../../../accounts/invitations.js';
import { EMAIL_MAX_LENGTH } from '../../../accounts/users.js';
import type { DbPool } from '../../../db/pool.js';
import { issuerOf, type IssuerSettings } from '../../../oauth/issuer.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { roleSchema } from '../answers.js';
import { invitationErrors, invitationRefusal } from './schema.js';
import { createdInvitationSchema } from './answers.js';

export const createInvitationRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/invitations',
  summary:
    'Invites an e-mail to the organization with a role; its user accepts or declines once signed in',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: z.strictObject({ email: z.string().max(EMAIL_MAX_LENGTH), role: roleSchema }),
  responses: {
    201: {
      description: 'the pending invitation, with its accept token and link',
      schema: createdInvitationSchema,
    },
  },
  errors: [...invitationErrors, 'gw_too_many_attempts'],
  answerCarriesSecret: true,
  async handler(
    { request, caller, body },
    deps: { readonly db: DbPool; readonly oauth: { readonly issuer: IssuerSettings } },
  ) {
    try {
      const { invitation, acceptToken } = await createInvitation(
        deps.db,
        { ...caller.actor, role: caller.org.role },
        caller.org.id,
        body.email,
        body.role,
      );
      // The gateway's public origin (PUBLIC_ORIGIN, else the one this request was sent to);
      // the token rides in the fragment, which no browser sends to a server.
      const origin = issuerOf(deps.oauth.issuer, request.headers);
      return {
        ...invitationView(invitation),
        accept_token: acceptToken,
        accept_url: `${origin}/dashboard/#invitation_token=${acceptToken}`,
      };
    } catch (error) {
      return invitationRefusal(error);
    }
  },
});
