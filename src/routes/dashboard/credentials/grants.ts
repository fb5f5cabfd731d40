// PUT and DELETE /dashboard/api/credentials/{credential_id}/grants/{app_connection_id} (admin
// or owner): lets a connection of the credential's organization use it, or stops it. A
// credential serves only the connections it is granted to; every instance follows at once.
// Granting twice or revoking a grant that is not there answers the credential unchanged; a
// connection outside the organization is not found either way.
import { declareRoute } from '../../framework/declaration.js';
import {
  credentialNotFound,
  credentialRefusal,
  credentialSchema,
  ofCredential,
  type CredentialRouteDeps,
} from './schema.js';

function grantRoute(granted: boolean) {
  return declareRoute({
    method: granted ? 'PUT' : 'DELETE',
    path: '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
    summary: granted
      ? 'Grants a provider credential to a connection of its organization'
      : "Revokes a connection's grant of a provider credential",
    caller: { kind: 'org_member', role: 'admin', org: ofCredential },
    responses: { 200: { description: 'the credential', schema: credentialSchema } },
    async handler({ params, caller }, deps: CredentialRouteDeps) {
      try {
        const credential = await deps.credentialStore.grant(
          params.credential_id,
          params.app_connection_id,
          granted,
          caller.actor,
        );
        if (!credential) return credentialNotFound();
        return credential;
      } catch (error) {
        return credentialRefusal(error);
      }
    },
  });
}

export const grantCredentialRoute = grantRoute(true);
export const revokeCredentialGrantRoute = grantRoute(false);
