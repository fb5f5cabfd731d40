// GET /dashboard/api/apps/{app_id}/oauth-clients: the app's OAuth clients (any member).
import { listOAuthClients, oauthClientView } from '../../../oauth/clients.js';
import { ofApp } from '../connections/schema.js';
import { declareListRoute } from '../list-route.js';
import { oauthClientSchema } from './answers.js';

export const listOAuthClientsRoute = declareListRoute({
  path: '/dashboard/api/apps/{app_id}/oauth-clients',
  summary: "The app's OAuth clients (secret hints, never secrets)",
  org: ofApp,
  rows: 'OAuth clients',
  item: oauthClientSchema,
  list: listOAuthClients,
  view: oauthClientView,
});
