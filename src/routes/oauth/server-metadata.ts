// GET /.well-known/oauth-authorization-server: the gateway's OAuth authorization server
// metadata (RFC 8414), so a client library finds the endpoints and checks the issuer and the
// `iss` of authorization responses (RFC 9207) on its own. Public, like the endpoints it names.
import { issuerOf } from '../../oauth/issuer.js';
import {
  METADATA_PATH,
  serverMetadata,
  serverMetadataSchema,
} from '../../oauth/server-metadata.js';
import { declareRoute } from '../framework/declaration.js';
import { authorizePageRoute } from './authorize-page.js';
import type { OAuthDeps } from './deps.js';
import { revokeTokenRoute } from './revoke.js';
import { tokenRoute } from './token.js';

export const serverMetadataRoute = declareRoute({
  method: 'GET',
  path: METADATA_PATH,
  summary: 'OAuth authorization server metadata (RFC 8414): the issuer, endpoints and methods',
  caller: { kind: 'none' },
  responses: { 200: { description: 'the metadata', schema: serverMetadataSchema } },
  handler({ request }, deps: OAuthDeps) {
    return serverMetadata(issuerOf(deps.oauth.issuer, request.headers), {
      authorization: authorizePageRoute.path,
      token: tokenRoute.path,
      revocation: revokeTokenRoute.path,
    });
  },
});
