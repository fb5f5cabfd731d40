// POST /v1/messages: the native messages protocol, for models of providers that speak it. Errors carry the vendor's `type` fields so its client's
// error classes map correctly.
import type { z } from 'zod';
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import { gwError, type GwError } from '../errors.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { admit, ADMISSION_ERRORS, type PlannedOutput } from '../inference/admission.js';
import { messagesRequestSchema } from '../inference/messages-request.js';
import {
  messagesOptionRefusal,
  promptCacheWrite,
  serverToolCosts,
} from '../protocols/messages/request.js';
import { PROXY_ERRORS, type ProxyDeps } from '../inference/proxy.js';
import { relayAdmission } from '../inference/proxy-http.js';
import { messagesRateLimitHeaders } from '../inference/rate-limit-headers.js';
import { unroutableModel, type CatalogModel } from '../catalog/models.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import { messagesTexts } from '../tokens/request-texts.js';
import { declareRoute } from './framework/declaration.js';
import { MESSAGE_EVENTS, messageSchema } from './inference-answers.js';
import { attributionHeaders, vendorVersionHeader } from './schemas.js';
import { modelLabel } from '../inference/request-annotations.js';

/** The client's protocol version header, forwarded to the provider. */
export const VENDOR_VERSION_HEADER = 'vendor-version';
/** What a forwarded version may be: printable ASCII (a vendor's are dates, `2023-06-01`). */
const VENDOR_VERSION = /^[\x20-\x7e]*$/;

export const messagesRoute = declareRoute({
  method: 'POST',
  path: '/v1/messages',
  summary:
    'Native messages protocol for vendor_a models (x-api-key or Bearer, vendor-version header)',
  caller: { kind: 'api_key' },
  headers: attributionHeaders.extend(vendorVersionHeader.shape),
  body: messagesRequestSchema,
  // Vendor SDKs add parameters of their own (such as api-version); the vendors ignore them too.
  unknownQueryParameters: 'ignored',
  responses: {
    200: {
      description: 'message, or with `stream: true` its SSE event stream',
      schema: messageSchema,
      eventStream: MESSAGE_EVENTS,
    },
  },
  errors: [...ADMISSION_ERRORS, ...PROXY_ERRORS],
  errorFlavor: 'messages',
  handler: ({ request, caller, body, response }, deps: { proxy: ProxyDeps }) =>
    handleMessages(deps.proxy, request, caller, body, response),
});

function unsupportedOnMessages(modelId: string): GwError {
  return gwError(
    'gw_unsupported_model',
    `model ${modelId} is not served on /v1/messages; use /v1/chat/completions`,
  );
}

async function handleMessages(
  deps: ProxyDeps,
  request: HttpRequest,
  identity: ApiKeyIdentity,
  parsed: z.infer<typeof messagesRequestSchema>,
  response: HttpResponse,
): Promise<GwError | undefined> {
  const body: Record<string, unknown> = parsed;
  response.annotate({ model: modelLabel(parsed.model) });
  const model = deps.services.catalog.get(parsed.model);
  if (!model) {
    return unroutableModel(deps.services.catalog, identity.modelPolicy, parsed.model, {
      serves: (meant) => meant.provider.protocol.messages !== undefined,
      elsewhere: 'served on /v1/chat/completions',
    });
  }
  if (!model.provider.protocol.messages) return unsupportedOnMessages(model.id);
  // The messages protocol's own user field (metadata.user_id) attributes like `user` does.
  const userId = parsed.metadata?.user_id;
  const stream = parsed.stream === true;
  const version = request.headers[VENDOR_VERSION_HEADER];
  // Sent upstream as it came: one the vendor's header could not carry is the client's error.
  if (version !== undefined && !VENDOR_VERSION.test(version)) {
    return gwError('gw_invalid_request', `${VENDOR_VERSION_HEADER}: must be printable ASCII`);
  }
  // Options billed beyond the catalogue's rates are refused; server tools billed beyond tokens:
  // web searches are held for and charged, others refused.
  const optionRefusal = messagesOptionRefusal(body);
  if (optionRefusal) return gwError('gw_invalid_request', optionRefusal);
  const toolCosts = serverToolCosts(parsed.tools, model.provider.webSearchPrice !== null);
  if ('refusal' in toolCosts) return gwError('gw_invalid_request', toolCosts.refusal);
  const admission = await admit(deps.services, {
    identity,
    requestId: request.requestId,
    headers: request.headers,
    body: { ...body, ...(typeof userId === 'string' && { user: userId }) },
    modelId: parsed.model,
    inputTexts: messagesTexts(body),
    requestedMaxTokens: parsed.max_tokens,
    promptCacheWrite: () => promptCacheWrite(body),
    webSearches: toolCosts.webSearches,
    prepareCall: (model: CatalogModel, output: PlannedOutput) => {
      stripAttributionFields(body);
      const messagesCall = model.provider.protocol.messages;
      // Checked above; only a catalogue refresh in between could change the model's provider.
      if (!messagesCall) throw unsupportedOnMessages(model.id);
      return messagesCall(model.provider, {
        body,
        upstreamModel: model.upstreamModel,
        maxTokens: output.maxOutputTokens,
        version,
      });
    },
    client: response,
    rateLimitHeaders: messagesRateLimitHeaders,
  });
  return relayAdmission(deps, admission, { stream, startedAtMs: request.receivedAtMs }, response);
}
