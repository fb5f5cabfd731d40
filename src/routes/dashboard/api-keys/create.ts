// POST /dashboard/api/connections/{connection_id}/api-keys {"name"?, "model_policy"?,
// "requests_per_minute"?, "product_user_requests_per_minute"?}: a new API key of the connection
// (admin or owner), with its request-rate limits (null or absent: none). The raw key is in this answer only. A policy
// pattern that can never match is refused (400); `warnings` name exact model ids the catalogue
// does not list yet (the key is issued: decision 338).
import { apiKeyView, createApiKeyAs } from '../../../admin/api-keys.js';
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { ofConnection } from '../connections/schema.js';
import { createApiKeyBody } from './schema.js';
import { createdApiKeySchema } from './answers.js';

export const createApiKeyRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/connections/{connection_id}/api-keys',
  summary: 'Issues an API key for the connection; the raw key is shown in this answer only',
  caller: { kind: 'org_member', role: 'admin', org: ofConnection },
  idempotent: true,
  body: createApiKeyBody,
  bodyOptional: true,
  answerCarriesSecret: true,
  responses: { 201: { description: 'the key, with its raw value', schema: createdApiKeySchema } },
  errors: ['gw_conflict'],
  async handler({ params, caller, body }, deps: { readonly db: DbPool }) {
    const issued = await createApiKeyAs(deps.db, caller.actor, params.connection_id, {
      name: body.name,
      ...(body.model_policy && { modelPolicy: body.model_policy }),
      rateLimits: {
        requestsPerMinute: body.requests_per_minute ?? null,
        productUserRequestsPerMinute: body.product_user_requests_per_minute ?? null,
      },
    });
    if (isGwError(issued)) return issued;
    return { ...apiKeyView(issued.row), key: issued.rawKey, warnings: issued.warnings };
  },
});
