// GET /dashboard/api/orgs/{org_id}/connected-apps: the apps connected by OAuth that this
// organization's wallet pays for, with what each spent (any member).
import { connectedAppView, listConnectedApps } from '../../../oauth/connected-apps.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { connectedAppSchema } from './answers.js';

export const listConnectedAppsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/connected-apps',
  summary: "Apps connected by OAuth that this organization's wallet pays for, with their spend",
  org: inOrg,
  rows: 'connected apps',
  item: connectedAppSchema,
  list: listConnectedApps,
  view: connectedAppView,
});
