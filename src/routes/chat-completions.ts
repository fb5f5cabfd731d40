// POST /v1/chat/completions: admit (model, attribution, estimate, reserve), then proxy.
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import { isGwError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { admit, ADMISSION_ERRORS } from '../inference/admission.js';
import {
  chatCompletionRequestSchema,
  type ChatCompletionRequest,
} from '../inference/chat-request.js';
import { proxyToVendor, PROXY_ERRORS, type ProxyDeps } from '../inference/proxy.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import { vendorAChatExchange } from '../providers/vendor-a/chat-exchange.js';
import { vendorBChatExchange } from '../providers/vendor-b/chat-exchange.js';
import { chatCompletionTexts } from '../tokens/request-texts.js';
import { declareRoute } from './declaration.js';

export const chatCompletionsRoute = declareRoute({
  method: 'POST',
  path: '/v1/chat/completions',
  summary: 'Chat completion (JSON, or SSE with stream: true) for any routable model',
  caller: { kind: 'api_key' },
  body: chatCompletionRequestSchema,
  responses: { 200: { description: 'chat.completion, or an SSE stream ending in data: [DONE]' } },
  errors: [...ADMISSION_ERRORS, ...PROXY_ERRORS],
  async handler({ request, caller, body: parsed }, response, deps: { proxy: ProxyDeps }) {
    await handleChatCompletion(deps.proxy, request, caller, parsed, response);
  },
});

async function handleChatCompletion(
  deps: ProxyDeps,
  request: HttpRequest,
  identity: ApiKeyIdentity,
  parsed: ChatCompletionRequest,
  response: HttpResponse,
): Promise<void> {
  const body: Record<string, unknown> = parsed;
  const admission = await admit(deps.services, {
    identity,
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
