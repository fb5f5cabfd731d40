// GET /v1/models: the models the calling key may use. Chat-completions list format by
// default; the messages protocol's list format when the request carries `vendor-version`.
import { modelPolicyAllows, type ModelCatalog } from '../catalog/models.js';
import type { ApiKeyStore } from '../auth/api-key-store.js';
import { isGwError } from '../errors.js';
import { sendError, sendJson } from '../http/respond.js';
import type { Route } from '../http/types.js';
import { VENDOR_VERSION_HEADER } from './messages.js';

/** Catalogue models have no creation date of their own; a fixed one keeps answers stable. */
const LISTED_SINCE = '2025-01-01T00:00:00Z';

export function modelsRoute(apiKeys: ApiKeyStore, catalog: ModelCatalog): Route {
  return {
    method: 'GET',
    path: '/v1/models',
    handler: async (request, response) => {
      const messagesClient = request.headers[VENDOR_VERSION_HEADER] !== undefined;
      const flavor = messagesClient ? 'messages' : 'default';
      const identity = await apiKeys.authenticate(request.headers);
      if (isGwError(identity)) return sendError(response, identity, flavor);
      const models = catalog
        .list()
        .filter((model) => modelPolicyAllows(identity.modelPolicy, model.id));
      if (messagesClient) {
        const data = models.map((model) => ({
          type: 'model',
          id: model.id,
          display_name: model.id,
          created_at: LISTED_SINCE,
        }));
        return sendJson(response, 200, {
          data,
          has_more: false,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
        });
      }
      sendJson(response, 200, {
        object: 'list',
        data: models.map((model) => ({
          id: model.id,
          object: 'model',
          created: Date.parse(LISTED_SINCE) / 1000,
          owned_by: model.vendor,
        })),
      });
    },
  };
}
