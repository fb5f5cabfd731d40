// GET /dashboard/api/connections/{connection_id}/api-keys: the connection's keys, as hints
// (any member).
import { apiKeyView, listApiKeys } from '../../../admin/api-keys.js';
import { ofConnection } from '../connections/schema.js';
import { declareListRoute } from '../list-route.js';
import { apiKeySchema } from './answers.js';

export const listApiKeysRoute = declareListRoute({
  path: '/dashboard/api/connections/{connection_id}/api-keys',
  summary: "The connection's API keys: hints, never keys",
  org: ofConnection,
  rows: 'API keys',
  item: apiKeySchema,
  list: listApiKeys,
  view: apiKeyView,
});
