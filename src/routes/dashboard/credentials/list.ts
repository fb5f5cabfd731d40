// GET /dashboard/api/orgs/{org_id}/credentials (any member): the organization's provider
// credentials (not deleted ones), oldest first, paged — fingerprints, never secrets.
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { inOrg, pageOf } from '../schemas.js';
import { credentialSchema, type CredentialRouteDeps } from './schema.js';

export const listCredentialsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/credentials',
  summary: "The organization's provider credentials (fingerprints, never secrets)",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'credentials', schema: pageOf(credentialSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request, caller }, response, deps: CredentialRouteDeps) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await deps.credentialStore.listPage(caller.org.id, page);
    sendJson(response, 200, { data: rows, next_cursor: nextCursor });
  },
});
