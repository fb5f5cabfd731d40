// GET /dashboard/api/apps/{app_id}/oauth-clients: the app's OAuth clients (any member).
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { listOAuthClients, oauthClientView } from '../../../oauth/clients.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { ofApp } from '../connections/schema.js';
import { pageOf } from '../schemas.js';
import { oauthClientSchema } from './schema.js';

export const listOAuthClientsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/apps/{app_id}/oauth-clients',
  summary: "The app's OAuth clients (secret hints, never secrets)",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: ofApp },
  query: pageQuerySchema,
  responses: { 200: { description: 'OAuth clients', schema: pageOf(oauthClientSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listOAuthClients(deps.db, request.params.app_id ?? '', page);
    sendJson(response, 200, { data: rows.map(oauthClientView), next_cursor: nextCursor });
  },
});
