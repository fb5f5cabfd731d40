// POST /v1/chat/completions: admit (model, attribution, estimate, build the upstream call,
// reserve), then proxy.
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import type { CatalogModel } from '../catalog/models.js';
import { gwError, type GwError } from '../errors.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { admit, ADMISSION_ERRORS, type PlannedOutput } from '../inference/admission.js';
import {
  chatCompletionRequestSchema,
  messageContentProblem,
  type ChatCompletionRequest,
} from '../inference/chat-request.js';
import { PROXY_ERRORS, type ProxyDeps } from '../inference/proxy.js';
import { relayAdmission } from '../inference/proxy-http.js';
import { chatCompletionsRateLimitHeaders } from '../inference/rate-limit-headers.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import type { UpstreamExchange } from '../protocols/common/exchange.js';
import { chatCompletionTexts } from '../tokens/request-texts.js';
import { declareRoute } from './framework/declaration.js';
import { CHAT_COMPLETION_EVENTS, chatCompletionSchema } from './inference-answers.js';
import { attributionHeaders } from './schemas.js';
import { modelLabel } from '../inference/request-annotations.js';

export const chatCompletionsRoute = declareRoute({
  method: 'POST',
  path: '/v1/chat/completions',
  summary: 'Chat completion (JSON, or SSE with stream: true) for any routable model',
  caller: { kind: 'api_key' },
  headers: attributionHeaders,
  body: chatCompletionRequestSchema,
  // Vendor SDKs add parameters of their own (such as api-version); the vendors ignore them too.
  unknownQueryParameters: 'ignored',
  responses: {
    200: {
      description: 'chat.completion, or with `stream: true` an SSE stream ending in data: [DONE]',
      schema: chatCompletionSchema,
      eventStream: CHAT_COMPLETION_EVENTS,
    },
  },
  errors: [...ADMISSION_ERRORS, ...PROXY_ERRORS],
  handler: ({ request, caller, body: parsed, response }, deps: { proxy: ProxyDeps }) =>
    handleChatCompletion(deps.proxy, request, caller, parsed, response),
});

async function handleChatCompletion(
  deps: ProxyDeps,
  request: HttpRequest,
  identity: ApiKeyIdentity,
  parsed: ChatCompletionRequest,
  response: HttpResponse,
): Promise<GwError | undefined> {
  const contentRefusal = messageContentProblem(parsed.messages);
  if (contentRefusal) return gwError('gw_invalid_request', contentRefusal);
  const body: Record<string, unknown> = parsed;
  response.annotate({ model: modelLabel(parsed.model) });
  const choices = parsed.n ?? 1;
  const protocol = deps.services.catalog.get(parsed.model)?.provider.protocol;
  const refusal = protocol?.chatRefusal(parsed, choices);
  if (refusal) return gwError('gw_invalid_request', refusal);
  const stream = parsed.stream === true;
  const clientWantsUsage = parsed.stream_options?.include_usage === true;
  const prepareCall = (model: CatalogModel, output: PlannedOutput): UpstreamExchange => {
    // The upstream body leaves without the gateway's own fields (admission has read them).
    stripAttributionFields(body);
    if (output.clamped) {
      // limit_output: the allowance covers only this much output, whichever field the vendor
      // reads.
      if (parsed.max_completion_tokens != null) body.max_completion_tokens = output.maxOutputTokens;
      if (parsed.max_tokens != null || parsed.max_completion_tokens == null) {
        body.max_tokens = output.maxOutputTokens;
      }
    }
    // The provider's wire protocol passes the call through or translates it.
    return model.provider.protocol.chat(model.provider, {
      body,
      upstreamModel: model.upstreamModel,
      maxTokens: output.maxOutputTokens,
      stream,
      clientWantsUsage,
    });
  };
  // Both limits may be sent, and the vendor may honour either: the hold covers the larger, and
  // a refusal names its field (max_completion_tokens on a tie; both are positive when sent).
  const limitField =
    (parsed.max_completion_tokens ?? 0) >= (parsed.max_tokens ?? 0)
      ? 'max_completion_tokens'
      : 'max_tokens';
  const admission = await admit(deps.services, {
    identity,
    requestId: request.requestId,
    headers: request.headers,
    body,
    modelId: parsed.model,
    inputTexts: chatCompletionTexts(body),
    requestedMaxTokens: parsed[limitField] ?? undefined,
    maxTokensField: limitField,
    choices,
    prepareCall,
    client: response,
    rateLimitHeaders: chatCompletionsRateLimitHeaders,
  });
  return relayAdmission(deps, admission, { stream, startedAtMs: request.receivedAtMs }, response);
}
