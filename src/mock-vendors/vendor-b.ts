// vendor_b (chat completions) wire format for the mock: completions, chunks, errors, models.
// Shapes follow the openai SDK's ChatCompletion / ChatCompletionChunk types.
import { chatCompletionTexts } from '../tokens/request-texts.js';
import {
  bearerToken,
  fittingToolCall,
  mockId,
  namedOrFirstTool,
  outputText,
  renderedOnce,
  renderedWords,
  type OfferedTool,
  type ToolCallOutput,
  withUsageJson,
} from './output.js';
import { DEFAULT_RETRY_AFTER_S } from './faults.js';
import { faultAnswers, jsonError } from './responses.js';
import type {
  AnswerPlan,
  JsonObject,
  MockError,
  MockErrorFault,
  MockHeaders,
  MockProtocol,
  StreamEvents,
} from './types.js';

const SYSTEM_FINGERPRINT = 'fp_mock';

function error(
  status: string,
  type: string,
  code: string | null,
  message: string,
  param: string | null = null,
  headers: readonly (readonly [string, string])[] = [],
): MockError {
  return jsonError(status, { error: { message, type, param, code } }, headers);
}

function rateLimit(retryAfterSeconds: number): MockError {
  return error(
    '429 Too Many Requests',
    'requests',
    'rate_limit_exceeded',
    `Rate limit reached for requests. Please try again in ${retryAfterSeconds}s.`,
    null,
    [['retry-after', String(retryAfterSeconds)]],
  );
}

// Static error answers, serialised once.
const ERRORS: Readonly<Record<MockErrorFault, MockError>> = {
  missing_key: error(
    '401 Unauthorized',
    'invalid_request_error',
    null,
    "You didn't provide an API key. Provide it in the Authorization header (Bearer auth).",
  ),
  bad_key: error(
    '401 Unauthorized',
    'invalid_request_error',
    'invalid_api_key',
    'Incorrect API key provided.',
  ),
  rate_limit: rateLimit(DEFAULT_RETRY_AFTER_S),
  quota: error(
    '429 Too Many Requests',
    'insufficient_quota',
    'insufficient_quota',
    'You exceeded your current quota, please check your plan and billing details.',
  ),
  server_error: error(
    '500 Internal Server Error',
    'server_error',
    null,
    'The server had an error while processing your request. Sorry about that!',
  ),
  overloaded: error(
    '503 Service Unavailable',
    'server_error',
    null,
    'The server is overloaded or not ready yet.',
  ),
};

const MISSING_MESSAGES = error(
  '400 Bad Request',
  'invalid_request_error',
  'missing_required_parameter',
  "Missing required parameter: 'messages'.",
  'messages',
);
const MISSING_MODEL = error(
  '400 Bad Request',
  'invalid_request_error',
  'missing_required_parameter',
  "Missing required parameter: 'model'.",
  'model',
);

/** A vendor_b tool definition: `function.name` and `function.parameters`. */
function offeredTool(definition: unknown): OfferedTool | undefined {
  const fn = (definition as { function?: { name?: unknown; parameters?: unknown } } | null)
    ?.function;
  return typeof fn?.name === 'string' ? { name: fn.name, schema: fn.parameters } : undefined;
}

/** The tool to call, or undefined when the answer is text (no tools, "none", or a tool result). */
function chosenTool(body: JsonObject): OfferedTool | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0 || body.tool_choice === 'none')
    return undefined;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last: unknown = messages[messages.length - 1];
  if ((last as { role?: unknown } | undefined)?.role === 'tool') return undefined;
  const named = (body.tool_choice as { function?: { name?: unknown } } | null)?.function?.name;
  return namedOrFirstTool(body.tools, named, offeredTool);
}

/** The generated tool call, unless max tokens cannot hold it (then the answer is text). */
const plannedToolCall = (plan: AnswerPlan): ToolCallOutput | undefined =>
  fittingToolCall(chosenTool(plan.body), plan.maxTokens);

function usageOf(plan: AnswerPlan, completionTokens: number): string {
  return (
    `{"prompt_tokens":${plan.inputTokens},"completion_tokens":${completionTokens},` +
    `"total_tokens":${plan.inputTokens + completionTokens}}`
  );
}

/**
 * The tier the answer (and every chunk) says it was served at: `default`, unless the request's
 * `mock:service_tier=…` directive names another (lower-case letters).
 */
const servedTier = (plan: AnswerPlan): string => plan.servedAs.serviceTier ?? 'default';

/** Choices asked for by `n` (1 to 128; anything else: 1). */
function choiceCount(body: JsonObject): number {
  const n = body.n;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 128 ? n : 1;
}

function completion(plan: AnswerPlan): string {
  const choices = choiceCount(plan.body);
  const call = plannedToolCall(plan);
  let message: JsonObject;
  let finishReason: string;
  let completionTokens: number;
  if (call) {
    message = {
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [
        {
          id: mockId('call_'),
          type: 'function',
          function: { name: call.name, arguments: call.argumentsJson },
        },
      ],
    };
    finishReason = 'tool_calls';
    completionTokens = call.outputTokens;
  } else {
    message = { role: 'assistant', content: outputText(plan.outputTokens), refusal: null };
    finishReason = plan.limitedByMax ? 'length' : 'stop';
    completionTokens = plan.outputTokens;
  }
  const answer = {
    id: mockId('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: plan.model,
    // `n` choices, each the same answer; usage counts every one (as the vendor bills them).
    choices: Array.from({ length: choices }, (_, index) => ({
      index,
      message,
      logprobs: null,
      finish_reason: finishReason,
    })),
    service_tier: servedTier(plan),
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  return withUsageJson(answer, usageOf(plan, completionTokens * choices));
}

const wordDelta = renderedWords((word) => JSON.stringify({ content: word }));

function streamEvents(plan: AnswerPlan): StreamEvents {
  const wantsUsage =
    (plan.body.stream_options as { include_usage?: unknown } | null)?.include_usage === true;
  const head =
    `data: {"id":"${mockId('chatcmpl-')}","object":"chat.completion.chunk",` +
    `"created":${Math.floor(Date.now() / 1000)},"model":${JSON.stringify(plan.model)},` +
    `"service_tier":"${servedTier(plan)}","system_fingerprint":"${SYSTEM_FINGERPRINT}"`;
  const choiceHead = `${head},"choices":[{"index":0,"delta":`;
  // With include_usage every chunk carries "usage":null until the usage chunk.
  const tail = wantsUsage ? '}],"usage":null}\n\n' : '}]}\n\n';
  const chunk = (delta: string, finishReason: string | null = null): string =>
    `${choiceHead}${delta},"logprobs":null,"finish_reason":${
      finishReason === null ? 'null' : `"${finishReason}"`
    }${tail}`;

  const call = plannedToolCall(plan);
  const events: string[] = [];
  let tokenEventCount: number;
  let finishReason: string;
  let completionTokens: number;
  if (call) {
    const opening = {
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [
        {
          index: 0,
          id: mockId('call_'),
          type: 'function',
          function: { name: call.name, arguments: '' },
        },
      ],
    };
    events.push(chunk(JSON.stringify(opening)));
    for (const fragment of call.argumentDeltas) {
      events.push(
        chunk(`{"tool_calls":[{"index":0,"function":{"arguments":${JSON.stringify(fragment)}}}]}`),
      );
    }
    tokenEventCount = call.argumentDeltas.length;
    finishReason = 'tool_calls';
    completionTokens = call.outputTokens;
  } else {
    events.push(chunk('{"role":"assistant","content":"","refusal":null}'));
    for (let index = 0; index < plan.outputTokens; index += 1) events.push(chunk(wordDelta(index)));
    tokenEventCount = plan.outputTokens;
    finishReason = plan.limitedByMax ? 'length' : 'stop';
    completionTokens = plan.outputTokens;
  }
  events.push(chunk('{}', finishReason));
  if (wantsUsage)
    events.push(`${head},"choices":[],"usage":${usageOf(plan, completionTokens)}}\n\n`);
  events.push('data: [DONE]\n\n');
  return { events, firstTokenEvent: 1, tokenEventCount };
}

function invalidRequest(body: JsonObject): MockError | undefined {
  if (!Array.isArray(body.messages)) return MISSING_MESSAGES;
  if (typeof body.model !== 'string') return MISSING_MODEL;
  return undefined;
}

export const vendorB: MockProtocol = {
  requestIdHeader: 'x-request-id',
  apiKey: (headers: MockHeaders) => bearerToken(headers.authorization),
  inputTexts: chatCompletionTexts,
  invalidRequest,
  error: faultAnswers(ERRORS, rateLimit),
  invalidJson: error(
    '400 Bad Request',
    'invalid_request_error',
    null,
    'We could not parse the JSON body of your request.',
  ),
  notFound: error(
    '404 Not Found',
    'invalid_request_error',
    'unknown_url',
    'Unknown request URL. Please check the URL for typos.',
  ),
  tooLarge: error(
    '413 Payload Too Large',
    'invalid_request_error',
    'request_too_large',
    'Request too large.',
  ),
  completion,
  streamEvents,
  streamErrorEvent:
    'data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}\n\n',
  hugeEvent: renderedOnce(
    (text) =>
      `data: {"id":"chatcmpl-mock-huge","object":"chat.completion.chunk","created":0,"model":"mock","choices":[{"index":0,"delta":{"content":"${text}"},"logprobs":null,"finish_reason":null}]}\n\n`,
  ),
};

export const VENDOR_B_MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1', 'gpt-4.1-mini'] as const;

/** GET /v1/models in vendor_b's list format (static: serialised once). */
export const vendorBModelsBody = JSON.stringify({
  object: 'list',
  data: VENDOR_B_MODELS.map((id) => ({
    id,
    object: 'model',
    created: 1_700_000_000,
    owned_by: 'vendor_b',
  })),
});
