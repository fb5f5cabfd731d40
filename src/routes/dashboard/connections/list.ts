// GET /dashboard/api/apps/{app_id}/connections: the app's connections (any member).
import { connectionView, listConnections } from '../../../admin/connections.js';
import { declareListRoute } from '../list-route.js';
import { ofApp } from './schema.js';
import { connectionSchema } from './answers.js';

export const listConnectionsRoute = declareListRoute({
  path: '/dashboard/api/apps/{app_id}/connections',
  summary: "The app's connections and their settings",
  org: ofApp,
  rows: 'connections',
  item: connectionSchema,
  list: listConnections,
  view: connectionView,
});
