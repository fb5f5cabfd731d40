// PUT and DELETE /dashboard/api/credentials/{credential_id}/grants/{app_connection_id} (admin
// or owner): lets a connection of the credential's organization use it, or stops it. A
// credential serves only the connections it is granted to; every instance follows at once.
// Granting twice or revoking a grant that is not there answers the credential unchanged; a
// connection outside the organization is not found either way. The answer's `warnings` say
// when no connection is left granted: the credential then serves nothing (decision 456).
import { writtenCredential } from '../../../credentials/written-credential.js';
import { declareRoute } from '../../framework/declaration.js';
import {
  credentialNotFound,
  credentialRefusal,
  ofCredential,
  type CredentialWriteDeps,
} from './schema.js';
import { writtenCredentialSchema } from './answers.js';

function grantRoute(granted: boolean) {
  return declareRoute({
    method: granted ? 'PUT' : 'DELETE',
    path: '/dashboard/api/credentials/{credential_id}/grants/{app_connection_id}',
    summary: granted
      ? 'Grants a provider credential to a connection of its organization'
      : "Revokes a connection's grant of a provider credential",
    caller: { kind: 'org_member', role: 'admin', org: ofCredential },
    responses: {
      200: {
        description: 'the credential, and its warnings (none granted is one)',
        schema: writtenCredentialSchema,
      },
    },
    async handler({ params, caller }, deps: CredentialWriteDeps) {
      try {
        const credential = await deps.credentialStore.grant(
          params.credential_id,
          params.app_connection_id,
          granted,
          caller.actor,
        );
        if (!credential) return credentialNotFound();
        return await writtenCredential(deps.db, credential, false);
      } catch (error) {
        return credentialRefusal(error);
      }
    },
  });
}

export const grantCredentialRoute = grantRoute(true);
export const revokeCredentialGrantRoute = grantRoute(false);
