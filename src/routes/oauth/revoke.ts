// POST /oauth/revoke (form-encoded, RFC 7009): the app revokes its token. The client
// authenticates as at the token endpoint. {"revoked": true} when an active connection was
// revoked (its token refused by every instance within a second; requests in flight settle
// normally), {"revoked": false} when it already was or the token is not one of this client's
// — 200 either way (RFC 7009 section 2.2).
import { z } from 'zod';
import { gwError } from '../../errors.js';
import { oauthHeaders } from '../../http/respond.js';
import { revokeByToken } from '../../oauth/connections.js';
import { answer, declareRoute } from '../framework/declaration.js';
import type { OAuthDeps } from './deps.js';

const parameter = z.string().max(4096).optional();

const revokeRequestSchema = z.object({
  token: parameter.describe('the gw_oauth_… token'),
  token_type_hint: parameter.describe('ignored (one kind of token)'),
  client_id: parameter,
  client_secret: parameter.describe('confidential clients (or HTTP Basic)'),
});

export const revokeTokenRoute = declareRoute({
  method: 'POST',
  path: '/oauth/revoke',
  summary: 'Revokes an OAuth token and its app connection (RFC 7009)',
  caller: { kind: 'oauth_client' },
  body: revokeRequestSchema,
  bodyEncoding: 'form',
  responses: {
    200: {
      description: 'whether an active connection was revoked now',
      schema: z.object({ revoked: z.boolean() }),
    },
  },
  errors: ['gw_unavailable'],
  errorFlavor: 'oauth',
  async handler({ caller, body }, deps: OAuthDeps) {
    if (!body.token) {
      return gwError('gw_invalid_request', 'token is required');
    }
    const revoked = await revokeByToken(deps.oauth.db, deps.oauth.apiKeys, caller, body.token);
    return answer(200, { revoked }, oauthHeaders);
  },
});
