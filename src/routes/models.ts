// GET /v1/models: the models the calling key may use. Chat-completions list format by
// default; the messages protocol's list format when the request carries `vendor-version`.
import { modelPolicyAllows, type ModelCatalog } from '../catalog/models.js';
import { declareRoute } from './framework/declaration.js';
import { VENDOR_VERSION_HEADER } from './messages.js';

/** Catalogue models have no creation date of their own; a fixed one keeps answers stable. */
const LISTED_SINCE = '2025-01-01T00:00:00Z';

export const modelsRoute = declareRoute({
  method: 'GET',
  path: '/v1/models',
  summary: 'Models the key may use (messages-protocol format with a vendor-version header)',
  caller: { kind: 'api_key' },
  responses: { 200: { description: 'model list' } },
  errorFlavor: (headers) => (headers[VENDOR_VERSION_HEADER] !== undefined ? 'messages' : 'default'),
  handler({ request, caller }, deps: { readonly catalog: ModelCatalog }) {
    const models = deps.catalog
      .list()
      .filter((model) => modelPolicyAllows(caller.modelPolicy, model.id));
    if (request.headers[VENDOR_VERSION_HEADER] !== undefined) {
      const data = models.map((model) => ({
        type: 'model',
        id: model.id,
        display_name: model.id,
        created_at: LISTED_SINCE,
      }));
      return {
        data,
        has_more: false,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      };
    }
    return {
      object: 'list',
      data: models.map((model) => ({
        id: model.id,
        object: 'model',
        created: Date.parse(LISTED_SINCE) / 1000,
        owned_by: model.vendor,
      })),
    };
  },
});
