// POST /dashboard/api/api-keys/{id}/rotate {"grace_seconds"?}: a new key for the same
// connection and policy (admin or owner). The old key stops at once, or when the grace period
// (at most 24 h) ends, on every instance. The new raw key is in this answer only.
import { apiKeyView, rotateApiKeyAs } from '../../../admin/api-keys.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofApiKey, rotateApiKeyBody } from './schema.js';
import { issuedApiKeySchema } from './answers.js';

export const rotateApiKeyRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/api-keys/{id}/rotate',
  summary:
    'Rotates an API key: a new raw key (shown once); the old one stops at once or after a grace period',
  caller: { kind: 'org_member', role: 'admin', org: ofApiKey },
  body: rotateApiKeyBody,
  bodyOptional: true,
  answerCarriesSecret: true,
  responses: {
    201: { description: 'the new key, with its raw value', schema: issuedApiKeySchema },
  },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller, body }, deps: KeyRevokingDeps) {
    const rotated = await rotateApiKeyAs(
      deps.db,
      deps.apiKeys,
      caller.actor,
      params.id,
      body.grace_seconds,
    );
    if (isGwError(rotated)) return rotated;
    return { ...apiKeyView(rotated.issued.row), key: rotated.issued.rawKey };
  },
});
