// GET /v1/models/{model_id}: one model the calling key may use, as the list shows it (what the
// vendors' clients call to retrieve a model). A model id holds a '/' (`vendor_b/gpt-4o-mini`):
// the path takes it percent-encoded, as the clients send it, or as written.
import { usableModel, type ModelCatalog } from '../catalog/models.js';
import { isGwError } from '../errors.js';
import { declareRoute } from './framework/declaration.js';
import { vendorVersionHeader } from './schemas.js';
import { modelFormatOf, modelObject, modelObjectSchema } from './models.js';

export const modelRoute = declareRoute({
  method: 'GET',
  path: '/v1/models/{model_id*}',
  summary: 'One model the key may use (messages-protocol format with a vendor-version header)',
  caller: { kind: 'api_key' },
  headers: vendorVersionHeader,
  // Vendor SDKs add parameters of their own (such as api-version); the vendors ignore them too.
  unknownQueryParameters: 'ignored',
  responses: { 200: { description: 'the model', schema: modelObjectSchema } },
  errors: ['gw_unsupported_model', 'gw_model_not_allowed'],
  errorFlavor: modelFormatOf,
  handler({ request, params, caller }, deps: { readonly catalog: ModelCatalog }) {
    const model = usableModel(deps.catalog, caller.modelPolicy, params.model_id);
    if (isGwError(model)) return model;
    return modelObject(model, modelFormatOf(request.headers));
  },
});
