// GET /dashboard/api/user/activity: what the signed-in user did in the dashboard (their audit
// entries), in every organization they are a member of, newest first. After "sign out
// everywhere" (a lost laptop, a stolen session), it is where they find what was done in their
// name, to undo it: keys issued, apps connected, members invited.
import { activityView, readUserActivity } from '../../audit/audit-log.js';
import type { DbPool } from '../../db/pool.js';
import { newestFirstPageQuerySchema } from '../../db/pages.js';
import { declareRoute } from '../framework/declaration.js';
import { activityEntrySchema, pageOf } from './answers.js';

export const userActivityRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/user/activity',
  summary:
    'What you did in the dashboard, in every organization you are a member of: your audit entries, newest first',
  caller: { kind: 'session' },
  query: newestFirstPageQuerySchema,
  responses: {
    200: {
      description: 'your audit entries, newest first',
      schema: pageOf(activityEntrySchema),
    },
  },
  errors: ['gw_invalid_request'],
  async handler({ query, caller }, deps: { readonly db: DbPool }) {
    const { rows, nextCursor } = await readUserActivity(
      deps.db,
      caller.user.id,
      query.limit,
      query.cursor ?? null,
    );
    return { data: rows.map(activityView), next_cursor: nextCursor };
  },
});
