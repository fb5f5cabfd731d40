// DELETE /dashboard/api/oauth-clients/{client_id}: deletes an OAuth client (admin or owner).
// Every connection made through it is revoked: its tokens stop on every instance at once.
import { gwError } from '../../../errors.js';
import { deleteOAuthClientAs, oauthClientView } from '../../../oauth/clients.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofOAuthClient } from './schema.js';
import { oauthClientSchema } from './answers.js';

export const deleteOAuthClientRoute = declareRoute({
  method: 'DELETE',
  path: '/dashboard/api/oauth-clients/{client_id}',
  summary: 'Deletes an OAuth client: the connections made through it are revoked',
  caller: { kind: 'org_member', role: 'admin', org: ofOAuthClient },
  responses: { 200: { description: 'the deleted client', schema: oauthClientSchema } },
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    const deleted = await deleteOAuthClientAs(
      deps.db,
      deps.apiKeys,
      caller.actor,
      params.client_id,
    );
    if (!deleted) {
      return gwError('gw_not_found', 'no OAuth client with this id in your organizations');
    }
    return oauthClientView(deleted);
  },
});
