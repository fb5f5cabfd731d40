// POST /dashboard/api/oauth-clients/{client_id}/rotate-secret {"grace_seconds"?} (admin or
// owner): a new client secret for a confidential client, shown in this answer only. The old
// one keeps authenticating beside it for the grace period (24 h by default, at most 7 days; 0
// ends it at once, for a leaked secret). The client's connections and tokens are untouched.
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { oauthClientView, rotateOAuthClientSecretAs } from '../../../oauth/clients.js';
import { declareRoute } from '../../framework/declaration.js';
import { ofOAuthClient, rotateOAuthClientSecretBody } from './schema.js';
import { rotatedOAuthClientSchema } from './answers.js';

export const rotateOAuthClientSecretRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/oauth-clients/{client_id}/rotate-secret',
  summary:
    "Rotates a confidential client's secret: the old one also authenticates during the grace period",
  caller: { kind: 'org_member', role: 'admin', org: ofOAuthClient },
  body: rotateOAuthClientSecretBody,
  bodyOptional: true,
  answerCarriesSecret: true,
  responses: {
    200: { description: 'the client, with its new secret', schema: rotatedOAuthClientSchema },
  },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller, body }, deps: { readonly db: DbPool }) {
    const rotated = await rotateOAuthClientSecretAs(
      deps.db,
      caller.actor,
      params.client_id,
      body.grace_seconds,
    );
    if (isGwError(rotated)) return rotated;
    return { ...oauthClientView(rotated.row), client_secret: rotated.clientSecret! };
  },
});
