// GET /dashboard/api/orgs/{org_id}/service-keys: the organization's service keys, as hints
// (any member).
import { listServiceKeys, serviceKeyView } from '../../../admin/service-keys.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { serviceKeySchema } from './answers.js';

export const listServiceKeysRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/service-keys',
  summary: "The organization's service keys: hints, never keys",
  org: inOrg,
  rows: 'service keys',
  item: serviceKeySchema,
  list: listServiceKeys,
  view: serviceKeyView,
});
