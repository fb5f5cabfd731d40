// GET /dashboard/api/orgs/{org_id}/members/{user_id}: one member of the organization (any
// member): what a page that names users by id (the wallet's history) looks up for the ids it
// shows, however many members the organization has. A user who is not a member there, and
// any user of another organization, is not found.
import { getMember, memberView } from '../../../accounts/members.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { memberSchema } from './answers.js';

export const getMemberRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/members/{user_id}',
  summary: 'One member of the organization and their role',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'the member', schema: memberSchema } },
  errors: ['gw_not_found'],
  async handler({ params, caller }, deps: { readonly db: DbPool }) {
    const member = await getMember(deps.db, caller.org.id, params.user_id);
    if (!member) return gwError('gw_not_found', 'no member with this id in the organization');
    return memberView(member);
  },
});
