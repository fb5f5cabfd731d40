// POST /v1/messages/count_tokens: the input tokens of a messages request (reserves nothing).
// Free and not rate limited: its counts wait in the organization's lane of the shared counting
// threads, bounded like an inference request's (decision 351).
import { z } from 'zod';
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import { modelPolicyAllows, type ModelCatalog } from '../catalog/models.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { countTokensRequestSchema } from '../inference/messages-request.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { messagesTexts } from '../tokens/request-texts.js';
import { declareRoute } from './framework/declaration.js';
import { modelLabel } from '../inference/request-annotations.js';

interface CountTokensDeps {
  readonly catalog: ModelCatalog;
  readonly tokenCounter: TokenCounter;
}

export const countTokensRoute = declareRoute({
  method: 'POST',
  path: '/v1/messages/count_tokens',
  summary: 'Counts the input tokens of a messages request; reserves nothing',
  caller: { kind: 'api_key' },
  body: countTokensRequestSchema,
  responses: {
    200: { description: 'input token count', schema: z.object({ input_tokens: z.number().int() }) },
  },
  errors: ['gw_model_not_allowed', 'gw_unsupported_model', 'gw_concurrency_limited'],
  errorFlavor: 'messages',
  handler: ({ caller, body, response }, deps: CountTokensDeps) =>
    countTokens(deps, caller, body, response),
});

async function countTokens(
  deps: CountTokensDeps,
  identity: ApiKeyIdentity,
  parsed: z.infer<typeof countTokensRequestSchema>,
  response: HttpResponse,
): Promise<GwError | { input_tokens: number }> {
  response.annotate({ model: modelLabel(parsed.model) });
  const model = deps.catalog.get(parsed.model);
  if (!model) {
    return gwError('gw_unsupported_model', `model ${parsed.model} is not routable`);
  }
  if (!modelPolicyAllows(identity.modelPolicy, model.id)) {
    return gwError('gw_model_not_allowed', `this API key may not use model ${model.id}`);
  }
  const inputTokens = await deps.tokenCounter.countInput(messagesTexts(parsed), {
    orgId: identity.orgId,
    client: response,
  });
  if (isGwError(inputTokens)) return inputTokens;
  return { input_tokens: inputTokens };
}
