// GET /dashboard/api/orgs: the organizations the signed-in user belongs to, with their role.
import { declareRoute } from '../framework/declaration.js';
import { orgSummarySchema, pageOf } from './answers.js';

export const listOrgsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs',
  summary: 'Your organizations and your role in each',
  caller: { kind: 'session' },
  responses: { 200: { description: 'organizations', schema: pageOf(orgSummarySchema) } },
  handler({ caller: { user } }) {
    return {
      data: user.memberships.map(({ id, name, role }) => ({ id, name, role })),
      next_cursor: null,
    };
  },
});
