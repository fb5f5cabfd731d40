// GET /dashboard/api/orgs/{org_id}/credentials (any member): the organization's provider
// credentials (not deleted ones), oldest first, paged — fingerprints, never secrets.
import { listCredentials } from '../../../credentials/credential-store.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { credentialSchema } from './answers.js';

export const listCredentialsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/credentials',
  summary: "The organization's provider credentials (fingerprints, never secrets)",
  org: inOrg,
  rows: 'credentials',
  item: credentialSchema,
  list: listCredentials,
  view: (credential) => credential,
});
