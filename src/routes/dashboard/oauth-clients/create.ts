// POST /dashboard/api/apps/{app_id}/oauth-clients {"name","redirect_uris",["public"]}: a new
// OAuth client of the app (admin or owner). A confidential client's secret is in this answer
// only.
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { createOAuthClientAs, oauthClientView } from '../../../oauth/clients.js';
import { declareRoute } from '../../framework/declaration.js';
import { ofApp } from '../connections/schema.js';
import { createOAuthClientBody } from './schema.js';
import { createdOAuthClientSchema } from './answers.js';

export const createOAuthClientRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/apps/{app_id}/oauth-clients',
  summary: 'Registers an OAuth client of the app; a confidential client gets its secret here only',
  caller: { kind: 'org_member', role: 'admin', org: ofApp },
  idempotent: true,
  body: createOAuthClientBody,
  answerCarriesSecret: true,
  responses: {
    201: {
      description: 'the client, with its secret if confidential',
      schema: createdOAuthClientSchema,
    },
  },
  errors: ['gw_invalid_request', 'gw_conflict'],
  async handler({ params, caller, body }, deps: { readonly db: DbPool }) {
    const created = await createOAuthClientAs(deps.db, caller.actor, {
      appId: params.app_id,
      name: body.name,
      redirectUris: body.redirect_uris,
      public: body.public === true,
    });
    if (isGwError(created)) return created;
    return {
      ...oauthClientView(created.row),
      ...(created.clientSecret !== undefined && { client_secret: created.clientSecret }),
    };
  },
});
