// PATCH /dashboard/api/apps/{app_id} {"name"} (admin or owner): renames an app (409 for a
// deleted one), audited.
import { z } from 'zod';
import { appDetailView, renameAppAs } from '../../../admin/apps.js';
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { displayName } from '../schemas.js';
import { ofApp } from './schema.js';
import { appDetailSchema } from './answers.js';

export const renameAppRoute = declareRoute({
  method: 'PATCH',
  path: '/dashboard/api/apps/{app_id}',
  summary: 'Renames an app',
  caller: { kind: 'org_member', role: 'admin', org: ofApp },
  body: z.strictObject({ name: displayName }),
  responses: { 200: { description: 'the app', schema: appDetailSchema } },
  errors: ['gw_conflict'],
  async handler({ params, caller, body }, deps: { readonly db: DbPool }) {
    const app = await renameAppAs(deps.db, caller.actor, params.app_id, body.name);
    if (isGwError(app)) return app;
    return appDetailView(app.row, app.counts);
  },
});
