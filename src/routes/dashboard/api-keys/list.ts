// GET /dashboard/api/connections/{connection_id}/api-keys: the connection's keys, as hints
// (any member).
import { apiKeyView, listApiKeys } from '../../../admin/api-keys.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { ofConnection } from '../connections/schema.js';
import { pageOf } from '../schemas.js';
import { apiKeySchema } from './schema.js';

export const listApiKeysRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/connections/{connection_id}/api-keys',
  summary: "The connection's API keys: hints, never keys",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: ofConnection },
  query: pageQuerySchema,
  responses: { 200: { description: 'API keys', schema: pageOf(apiKeySchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listApiKeys(
      deps.db,
      request.params.connection_id ?? '',
      page,
    );
    const now = Date.now();
    sendJson(response, 200, {
      data: rows.map((row) => apiKeyView(row, now)),
      next_cursor: nextCursor,
    });
  },
});
