// POST /v1/messages (the native messages protocol, vendor_a models) and
// POST /v1/messages/count_tokens. Errors carry the vendor's `type` fields so its client's
// error classes map correctly.
import { gwError, isGwError } from '../errors.js';
import { sendError, sendJson } from '../http/respond.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { admit, type PlannedOutput } from '../inference/admission.js';
import { countTokensRequestSchema, messagesRequestSchema } from '../inference/messages-request.js';
import { parseJsonBody } from '../inference/parse-body.js';
import type { ProxyPorts } from '../inference/proxy.js';
import { createProxyPorts, proxyToVendor, type ProxyDeps } from '../inference/proxy-http.js';
import { modelPolicyAllows, type CatalogModel } from '../catalog/models.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import { vendorAMessagesExchange } from '../providers/vendor-a/messages-exchange.js';
import { messagesTexts } from '../tokens/request-texts.js';

/** The client's protocol version header, forwarded to vendor_a. */
export const VENDOR_VERSION_HEADER = 'vendor-version';

export function messagesRoutes(deps: ProxyDeps): Route[] {
  const ports = createProxyPorts(deps);
  return [
    {
      method: 'POST',
      path: '/v1/messages',
      errorFlavor: 'messages',
      handler: (request, response) => handleMessages(deps, ports, request, response),
    },
    {
      method: 'POST',
      path: '/v1/messages/count_tokens',
      errorFlavor: 'messages',
      handler: (request, response) => handleCountTokens(deps, request, response),
    },
  ];
}

async function handleMessages(
  deps: ProxyDeps,
  ports: ProxyPorts,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const parsed = parseJsonBody(request.body, messagesRequestSchema);
  if (isGwError(parsed)) return sendError(response, parsed, 'messages');
  const body: Record<string, unknown> = parsed;
  const model = deps.services.catalog.get(parsed.model);
  if (model && model.vendor !== 'vendor_a') {
    return sendError(
      response,
      gwError(
        'gw_unsupported_model',
        `model ${model.id} is not served on /v1/messages; use /v1/chat/completions`,
      ),
      'messages',
    );
  }
  // The messages protocol's own user field (metadata.user_id) attributes like `user` does.
  const userId = parsed.metadata?.user_id;
  const stream = parsed.stream === true;
  const version = request.headers[VENDOR_VERSION_HEADER];
  const admission = await admit(deps.services, {
    requestId: request.requestId,
    headers: request.headers,
    body: { ...body, ...(typeof userId === 'string' && { user: userId }) },
    modelId: parsed.model,
    inputTexts: messagesTexts(body),
    requestedMaxTokens: parsed.max_tokens,
    prepareCall: (model: CatalogModel, output: PlannedOutput) => {
      stripAttributionFields(body);
      return vendorAMessagesExchange({
        body,
        upstreamModel: model.upstreamModel,
        maxTokens: output.maxOutputTokens,
        version,
      });
    },
  });
  if (isGwError(admission)) return sendError(response, admission, 'messages');
  // From here on every path settles: the hold is released and the usage recorded.
  await proxyToVendor(ports, admission, { stream, startedAtMs: request.receivedAtMs }, response);
}

async function handleCountTokens(
  deps: ProxyDeps,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const identity = await deps.services.apiKeys.authenticate(request.headers);
  if (isGwError(identity)) return sendError(response, identity, 'messages');
  const parsed = parseJsonBody(request.body, countTokensRequestSchema);
  if (isGwError(parsed)) return sendError(response, parsed, 'messages');
  const model = deps.services.catalog.get(parsed.model);
  if (!model) {
    return sendError(
      response,
      gwError('gw_unsupported_model', `model ${parsed.model} is not routable`),
      'messages',
    );
  }
  if (!modelPolicyAllows(identity.modelPolicy, model.id)) {
    return sendError(
      response,
      gwError('gw_model_not_allowed', `this API key may not use model ${model.id}`),
      'messages',
    );
  }
  const inputTokens = await deps.services.tokenCounter.countInput(messagesTexts(parsed));
  sendJson(response, 200, { input_tokens: inputTokens });
}
