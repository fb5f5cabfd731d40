// GET /dashboard/api/orgs/{org_id}/apps: the organization's apps, oldest first (any member).
import { appView, listApps } from '../../../admin/apps.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { appSchema } from './answers.js';

export const listAppsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/apps',
  summary: "The organization's apps, oldest first",
  org: inOrg,
  rows: 'apps',
  item: appSchema,
  list: listApps,
  view: appView,
});
