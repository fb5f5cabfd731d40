// GET /dashboard/api/orgs/{org_id}/invitations: the organization's pending invitations (admin
// or owner: those who may invite).
import { invitationView, listOrgInvitations } from '../../../accounts/invitations.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { invitationSchema } from './answers.js';

export const listInvitationsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/invitations',
  summary: "The organization's pending invitations",
  org: inOrg,
  role: 'admin',
  rows: 'pending invitations, oldest first',
  item: invitationSchema,
  list: listOrgInvitations,
  view: invitationView,
});
