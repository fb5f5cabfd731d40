// GET /dashboard/api/apps/{app_id} (any member): one app with its status and counts (active
// connections, working API keys, product users) for its overview. Deleted apps answer too,
// with status `deleted`: their usage and product users still name them.
import { appDetailView, getApp } from '../../../admin/apps.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { ofApp } from './schema.js';
import { appDetailSchema } from './answers.js';

export const getAppRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/apps/{app_id}',
  summary: 'One app, with its active connections, API keys and product users counted',
  caller: { kind: 'org_member', role: 'viewer', org: ofApp },
  responses: { 200: { description: 'the app', schema: appDetailSchema } },
  async handler({ params }, deps: { readonly db: DbPool }) {
    const app = await getApp(deps.db, params.app_id);
    if (!app) return gwError('gw_not_found', 'no app with this id');
    return appDetailView(app.row, app.counts);
  },
});
