// GET /dashboard/api/orgs/{org_id}/members: the organization's members and roles (any member).
import { listMembers, memberView } from '../../../accounts/members.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { memberSchema } from './answers.js';

export const listMembersRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/members',
  summary: "The organization's members and their roles",
  org: inOrg,
  rows: 'members',
  item: memberSchema,
  list: listMembers,
  view: memberView,
});
