// POST /v1/chat/completions: validate, admit (auth, attribution, estimate, reserve), proxy.
import { isGwError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { admit } from '../inference/admission.js';
import { chatCompletionRequestSchema } from '../inference/chat-request.js';
import { parseJsonBody } from '../inference/parse-body.js';
import { proxyToVendor, type ProxyDeps } from '../inference/proxy.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import { vendorAChatExchange } from '../providers/vendor-a/chat-exchange.js';
import { vendorBChatExchange } from '../providers/vendor-b/chat-exchange.js';
import { chatCompletionTexts } from '../tokens/request-texts.js';

export type ChatCompletionsDeps = ProxyDeps;

export function chatCompletionsRoute(deps: ChatCompletionsDeps): Route {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    handler: (request, response) => handleChatCompletion(deps, request, response),
  };
}

async function handleChatCompletion(
  deps: ChatCompletionsDeps,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const parsed = parseJsonBody(request.body, chatCompletionRequestSchema);
  if (isGwError(parsed)) return sendError(response, parsed);
  const body: Record<string, unknown> = parsed;
  const admission = await admit(deps.services, {
    requestId: request.requestId,
    headers: request.headers,
    body,
    modelId: parsed.model,
    inputTexts: chatCompletionTexts(body),
    requestedMaxTokens: parsed.max_completion_tokens ?? parsed.max_tokens ?? undefined,
  });
  if (isGwError(admission)) return sendError(response, admission);

  // From here on every path settles: the hold is released and the usage recorded.
  stripAttributionFields(body);
  if (admission.outputClamped) {
    // limit_output: the allowance covers only this much output.
    if (parsed.max_completion_tokens != null)
      body.max_completion_tokens = admission.maxOutputTokens;
    else body.max_tokens = admission.maxOutputTokens;
  }
  const stream = parsed.stream === true;
  const clientWantsUsage = parsed.stream_options?.include_usage === true;
  await proxyToVendor(
    deps,
    {
      admission,
      stream,
      startedAtMs: request.receivedAtMs,
      // vendor_b speaks chat completions natively; vendor_a's messages are translated.
      buildExchange: (route) =>
        admission.model.vendor === 'vendor_a'
          ? vendorAChatExchange({
              body,
              upstreamModel: admission.model.upstreamModel,
              maxTokens: admission.maxOutputTokens,
              stream,
              clientWantsUsage,
              route,
            })
          : vendorBChatExchange({
              body,
              upstreamModel: admission.model.upstreamModel,
              stream,
              clientWantsUsage,
              route,
            }),
    },
    response,
  );
}
