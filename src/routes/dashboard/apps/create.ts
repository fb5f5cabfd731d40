// POST /dashboard/api/orgs/{org_id}/apps {"name"}: creates an app (admin or owner).
import { z } from 'zod';
import { appView, createAppAs } from '../../../admin/apps.js';
import type { DbPool } from '../../../db/pool.js';
import { declareRoute } from '../../framework/declaration.js';
import { displayName, inOrg } from '../schemas.js';
import { appSchema } from './answers.js';

export const createAppRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/apps',
  summary: 'Creates an app in the organization',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: z.strictObject({ name: displayName }),
  responses: { 201: { description: 'the app', schema: appSchema } },
  async handler({ caller, body }, deps: { readonly db: DbPool }) {
    const app = await createAppAs(deps.db, caller.actor, caller.org.id, body.name);
    return appView(app);
  },
});
