// POST /v1/messages/count_tokens: the input tokens of a messages request (reserves nothing).
// Free. A key with `requests_per_minute` R counts its token counts in a bucket of their own,
// of 2R a minute (as Anthropic limits counts apart from messages, at twice the rate; decision
// 353), before anything is counted; a key without one, as before, costs no Redis call. Its
// counts wait in the organization's lane of the shared counting threads, bounded like an
// inference request's (decision 351).
import { z } from 'zod';
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import { usableModel, type ModelCatalog } from '../catalog/models.js';
import { isGwError, type GwError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { countTokensRequestSchema } from '../inference/messages-request.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { messagesTexts } from '../tokens/request-texts.js';
import { declareRoute } from './framework/declaration.js';
import { vendorVersionHeader } from './schemas.js';
import { modelLabel } from '../inference/request-annotations.js';
import { messagesRateLimitHeaders } from '../inference/rate-limit-headers.js';
import type { BudgetStore } from '../billing/budget-store.js';
import { rateLimitedError } from '../billing/rejections.js';
import { MAX_REQUESTS_PER_MINUTE } from '../admin/api-key-rate-limits.js';

interface CountTokensDeps {
  readonly catalog: ModelCatalog;
  readonly tokenCounter: TokenCounter;
  readonly proxy: { readonly services: { readonly budget: Pick<BudgetStore, 'takeCountTokens'> } };
}

/** A key's token counts a minute for its requests a minute (Anthropic's ratio), at most the
 * largest limit a bucket takes. */
export const countTokensPerMinute = (requestsPerMinute: number): number =>
  Math.min(2 * requestsPerMinute, MAX_REQUESTS_PER_MINUTE);

export const countTokensRoute = declareRoute({
  method: 'POST',
  path: '/v1/messages/count_tokens',
  summary: 'Counts the input tokens of a messages request; reserves nothing',
  caller: { kind: 'api_key' },
  headers: vendorVersionHeader,
  body: countTokensRequestSchema,
  // Vendor SDKs add parameters of their own (such as api-version); the vendors ignore them too.
  unknownQueryParameters: 'ignored',
  responses: {
    200: { description: 'input token count', schema: z.object({ input_tokens: z.number().int() }) },
  },
  errors: [
    'gw_model_not_allowed',
    'gw_unsupported_model',
    'gw_rate_limited',
    'gw_concurrency_limited',
  ],
  errorFlavor: 'messages',
  handler: ({ request, caller, body, response }, deps: CountTokensDeps) =>
    countTokens(deps, caller, body, request.requestId, response),
});

async function countTokens(
  deps: CountTokensDeps,
  identity: ApiKeyIdentity,
  parsed: z.infer<typeof countTokensRequestSchema>,
  requestId: string,
  response: HttpResponse,
): Promise<GwError | { input_tokens: number }> {
  response.annotate({ model: modelLabel(parsed.model) });
  const model = usableModel(deps.catalog, identity.modelPolicy, parsed.model);
  if (isGwError(model)) return model;
  const rateRefusal = await takeCountTokensRate(deps, identity, requestId, response);
  if (rateRefusal) return rateRefusal;
  const inputTokens = await deps.tokenCounter.countInput(messagesTexts(parsed), {
    orgId: identity.orgId,
    client: response,
  });
  if (isGwError(inputTokens)) return inputTokens;
  return { input_tokens: inputTokens };
}

/** Counts the request in the key's bucket of token counts: its refusal, or undefined. */
async function takeCountTokensRate(
  deps: CountTokensDeps,
  identity: ApiKeyIdentity,
  requestId: string,
  response: HttpResponse,
): Promise<GwError | undefined> {
  const requestsPerMinute = identity.requestsPerMinute ?? null;
  if (requestsPerMinute === null) return undefined;
  const taken = await deps.proxy.services.budget.takeCountTokens({
    orgId: identity.orgId,
    apiKeyId: identity.keyId,
    limitPerMinute: countTokensPerMinute(requestsPerMinute),
    requestId,
  });
  const headers = messagesRateLimitHeaders(taken.rateLimit);
  if (taken.kind === 'rate_limited') {
    const caller = identity.oauthClientId ? 'oauth_token' : 'api_key';
    return rateLimitedError(taken, caller, headers, 'token counts');
  }
  for (const name in headers) response.header(name, headers[name]!);
  return undefined;
}
