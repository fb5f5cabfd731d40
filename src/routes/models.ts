// GET /v1/models: the models the calling key may use. Chat-completions list format by
// default; the messages protocol's list format when the request carries `vendor-version`.
import { z } from 'zod';
import { modelPolicyAllows, type CatalogModel, type ModelCatalog } from '../catalog/models.js';
import { declareRoute } from './framework/declaration.js';
import { vendorVersionHeader } from './schemas.js';
import { VENDOR_VERSION_HEADER } from './messages.js';

/** Catalogue models have no creation date of their own; a fixed one keeps answers stable. */
const LISTED_SINCE = '2025-01-01T00:00:00Z';

/** Which protocol's model object a request wants: the messages one with a vendor-version header. */
export const modelFormatOf = (headers: Readonly<Record<string, string>>): 'messages' | 'default' =>
  headers[VENDOR_VERSION_HEADER] !== undefined ? 'messages' : 'default';

const chatCompletionsModel = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});
const messagesModel = z.object({
  type: z.literal('model'),
  id: z.string(),
  display_name: z.string(),
  created_at: z.string(),
});

/** A model object in either format (for /openapi.json). */
export const modelObjectSchema = z
  .union([chatCompletionsModel, messagesModel])
  .describe('the chat-completions model object; the messages one with a vendor-version header');

const modelListSchema = z
  .union([
    z.object({ object: z.literal('list'), data: z.array(chatCompletionsModel) }),
    z.object({
      data: z.array(messagesModel),
      has_more: z.boolean(),
      first_id: z.string().nullable(),
      last_id: z.string().nullable(),
    }),
  ])
  .describe('the chat-completions list; the messages one with a vendor-version header');

/** One model as GET /v1/models lists it and GET /v1/models/{id} answers it, in either format. */
export function modelObject(model: CatalogModel, format: 'messages' | 'default'): object {
  return format === 'messages'
    ? { type: 'model', id: model.id, display_name: model.id, created_at: LISTED_SINCE }
    : {
        id: model.id,
        object: 'model',
        created: Date.parse(LISTED_SINCE) / 1000,
        owned_by: model.vendor,
      };
}

export const modelsRoute = declareRoute({
  method: 'GET',
  path: '/v1/models',
  summary: 'Models the key may use (messages-protocol format with a vendor-version header)',
  caller: { kind: 'api_key' },
  headers: vendorVersionHeader,
  // Vendor SDKs add parameters of their own (such as api-version); the vendors ignore them too.
  unknownQueryParameters: 'ignored',
  responses: { 200: { description: 'model list', schema: modelListSchema } },
  errorFlavor: modelFormatOf,
  handler({ request, caller }, deps: { readonly catalog: ModelCatalog }) {
    const format = modelFormatOf(request.headers);
    const data = deps.catalog
      .list()
      .filter((model) => modelPolicyAllows(caller.modelPolicy, model.id))
      .map((model) => modelObject(model, format));
    if (format === 'messages') {
      const ids = data as { id: string }[];
      return {
        data,
        has_more: false,
        first_id: ids[0]?.id ?? null,
        last_id: ids.at(-1)?.id ?? null,
      };
    }
    return { object: 'list', data };
  },
});
