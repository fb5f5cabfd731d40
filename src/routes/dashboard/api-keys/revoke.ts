// POST /dashboard/api/api-keys/{id}/revoke: revokes an API key (admin or owner); every
// instance refuses it within a second. Revoking a revoked key changes nothing.
import { apiKeyView, revokeApiKeyAs } from '../../../admin/api-keys.js';
import { gwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofApiKey } from './schema.js';
import { apiKeySchema } from './answers.js';

export const revokeApiKeyRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/api-keys/{id}/revoke',
  summary: 'Revokes an API key: every instance refuses it within a second',
  caller: { kind: 'org_member', role: 'admin', org: ofApiKey },
  responses: { 200: { description: 'the revoked key', schema: apiKeySchema } },
  errors: ['gw_not_found'],
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    const row = await revokeApiKeyAs(deps.db, deps.apiKeys, caller.actor, params.id);
    if (!row) return gwError('gw_not_found', 'no API key with this id');
    return apiKeyView(row);
  },
});
