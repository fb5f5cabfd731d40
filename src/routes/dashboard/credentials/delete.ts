// DELETE /dashboard/api/credentials/{credential_id} (admin or owner): deletes a provider
// credential for good, revoking its connection grants (the spec's rule); every instance stops
// using it at once. Its sealed secret stays in Postgres, unusable, for the audit's sake.
import { declareRoute } from '../../framework/declaration.js';
import { credentialNotFound, ofCredential, type CredentialRouteDeps } from './schema.js';
import { credentialSchema } from './answers.js';

export const deleteCredentialRoute = declareRoute({
  method: 'DELETE',
  path: '/dashboard/api/credentials/{credential_id}',
  summary: 'Deletes a provider credential and revokes its connection grants',
  caller: { kind: 'org_member', role: 'admin', org: ofCredential },
  responses: { 200: { description: 'the deleted credential', schema: credentialSchema } },
  async handler({ params, caller }, deps: CredentialRouteDeps) {
    const credential = await deps.credentialStore.setStatus(
      params.credential_id,
      'deleted',
      caller.actor,
    );
    if (!credential) return credentialNotFound();
    return credential;
  },
});
