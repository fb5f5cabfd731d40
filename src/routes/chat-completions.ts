// POST /v1/chat/completions: validate, admit (auth, attribution, estimate, build the upstream
// call, reserve), proxy.
import { gwError, isGwError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { admit, type PlannedOutput } from '../inference/admission.js';
import { chatCompletionRequestSchema } from '../inference/chat-request.js';
import { parseJsonBody } from '../inference/parse-body.js';
import type { ProxyPorts } from '../inference/proxy.js';
import { createProxyPorts, proxyToVendor, type ProxyDeps } from '../inference/proxy-http.js';
import type { CatalogModel } from '../catalog/models.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import type { UpstreamExchange } from '../providers/exchange.js';
import { vendorAChatExchange } from '../providers/vendor-a/chat-exchange.js';
import { vendorBChatExchange } from '../providers/vendor-b/chat-exchange.js';
import { chatCompletionTexts } from '../tokens/request-texts.js';

export type ChatCompletionsDeps = ProxyDeps;

export function chatCompletionsRoute(deps: ChatCompletionsDeps): Route {
  const ports = createProxyPorts(deps);
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    handler: (request, response) => handleChatCompletion(deps, ports, request, response),
  };
}

async function handleChatCompletion(
  deps: ChatCompletionsDeps,
  ports: ProxyPorts,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const parsed = parseJsonBody(request.body, chatCompletionRequestSchema);
  if (isGwError(parsed)) return sendError(response, parsed);
  const body: Record<string, unknown> = parsed;
  const choices = parsed.n ?? 1;
  if (choices > 1 && deps.services.catalog.get(parsed.model)?.vendor === 'vendor_a') {
    // The messages protocol has no `n`: one choice would come back for the n asked and held.
    return sendError(
      response,
      gwError('gw_invalid_request', `n: model ${parsed.model} serves one choice per request`),
    );
  }
  const stream = parsed.stream === true;
  const clientWantsUsage = parsed.stream_options?.include_usage === true;
  const requestedMaxTokens = parsed.max_completion_tokens ?? parsed.max_tokens ?? undefined;
  const prepareCall = (model: CatalogModel, output: PlannedOutput): UpstreamExchange => {
    // The upstream body leaves without the gateway's own fields (admission has read them).
    stripAttributionFields(body);
    if (output.clamped) {
      // limit_output: the allowance covers only this much output.
      if (parsed.max_completion_tokens != null) body.max_completion_tokens = output.maxOutputTokens;
      else body.max_tokens = output.maxOutputTokens;
    }
    // vendor_b speaks chat completions natively; vendor_a's messages are translated.
    return model.vendor === 'vendor_a'
      ? vendorAChatExchange({
          body: body,
          upstreamModel: model.upstreamModel,
          maxTokens: output.maxOutputTokens,
          stream,
          clientWantsUsage,
        })
      : vendorBChatExchange({
          body: body,
          upstreamModel: model.upstreamModel,
          stream,
          clientWantsUsage,
        });
  };
  const admission = await admit(deps.services, {
    requestId: request.requestId,
    headers: request.headers,
    body,
    modelId: parsed.model,
    inputTexts: chatCompletionTexts(body),
    requestedMaxTokens,
    choices,
    prepareCall,
  });
  if (isGwError(admission)) return sendError(response, admission);
  // From here on every path settles: the hold is released and the usage recorded.
  await proxyToVendor(ports, admission, { stream, startedAtMs: request.receivedAtMs }, response);
}
