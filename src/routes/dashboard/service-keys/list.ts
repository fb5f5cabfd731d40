// GET /dashboard/api/orgs/{org_id}/service-keys: the organization's service keys, as hints
// (any member).
import { listServiceKeys, serviceKeyView } from '../../../admin/service-keys.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { pageOf, inOrg } from '../schemas.js';
import { serviceKeySchema } from './schema.js';

export const listServiceKeysRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/service-keys',
  summary: "The organization's service keys: hints, never keys",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'service keys', schema: pageOf(serviceKeySchema) } },
  errors: ['gw_invalid_request'],
  async handler({ caller, request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listServiceKeys(deps.db, caller.org.id, page);
    const now = Date.now();
    sendJson(response, 200, {
      data: rows.map((row) => serviceKeyView(row, now)),
      next_cursor: nextCursor,
    });
  },
});
