// PATCH /dashboard/api/api-keys/{id} {"requests_per_minute"?, "product_user_requests_per_minute"?}
// (admin or owner of the organization that owns the key): changes the request-rate limits of
// an API key, or of an OAuth token (a connected app's, in the paying organization); an absent
// field is kept, null clears it, at least one is named (400). A key that no longer works
// (revoked, its connection revoked, its rotation grace period over) is refused, 409
// gw_conflict, as its rotation is. Every instance applies them to the key's next request once
// the invalidation reaches it (pub/sub).
import { apiKeyView, updateApiKeyLimitsAs } from '../../../admin/api-keys.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofApiKey, updateApiKeyBody } from './schema.js';
import { apiKeySchema } from './answers.js';

export const updateApiKeyRoute = declareRoute({
  method: 'PATCH',
  path: '/dashboard/api/api-keys/{id}',
  summary: "Changes an API key's or OAuth token's request-rate limits (null clears one)",
  caller: { kind: 'org_member', role: 'admin', org: ofApiKey },
  body: updateApiKeyBody,
  responses: { 200: { description: 'the key', schema: apiKeySchema } },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller, body }, deps: KeyRevokingDeps) {
    const row = await updateApiKeyLimitsAs(deps.db, deps.apiKeys, caller.actor, params.id, {
      ...(body.requests_per_minute !== undefined && {
        requestsPerMinute: body.requests_per_minute,
      }),
      ...(body.product_user_requests_per_minute !== undefined && {
        productUserRequestsPerMinute: body.product_user_requests_per_minute,
      }),
    });
    if (isGwError(row)) return row;
    return apiKeyView(row);
  },
});
