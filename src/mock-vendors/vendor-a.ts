// vendor_a (messages protocol) wire format for the mock: messages, events, errors, models.
// Shapes follow the @anthropic-ai/sdk Message / RawMessageStreamEvent types.
import { messagesTexts } from '../tokens/request-texts.js';
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
  MockServedAs,
  StreamEvents,
} from './types.js';

function error(
  status: string,
  type: string,
  message: string,
  headers: readonly (readonly [string, string])[] = [],
): MockError {
  return jsonError(status, { type: 'error', error: { type, message } }, headers);
}

function rateLimit(retryAfterSeconds: number): MockError {
  return error(
    '429 Too Many Requests',
    'rate_limit_error',
    'Number of request tokens has exceeded your per-minute rate limit.',
    [['retry-after', String(retryAfterSeconds)]],
  );
}

// Static error answers, serialised once.
const ERRORS: Readonly<Record<MockErrorFault, MockError>> = {
  missing_key: error('401 Unauthorized', 'authentication_error', 'x-api-key header is required'),
  bad_key: error('401 Unauthorized', 'authentication_error', 'invalid x-api-key'),
  rate_limit: rateLimit(DEFAULT_RETRY_AFTER_S),
  // An exhausted prepaid balance: the vendor's documented 402 billing_error (see
  // docs/mock-vendors.md); the gateway's credential failover treats 402 as quota.
  quota: error(
    '402 Payment Required',
    'billing_error',
    'Your credit balance is too low to access the API. Please go to Plans & Billing to upgrade or purchase credits.',
  ),
  server_error: error('500 Internal Server Error', 'api_error', 'Internal server error'),
  overloaded: error('529 Site Overloaded', 'overloaded_error', 'Overloaded'),
};

const invalid = (message: string): MockError =>
  error('400 Bad Request', 'invalid_request_error', message);
const MISSING_MESSAGES = invalid('messages: Field required');
const MISSING_MODEL = invalid('model: Field required');
const MISSING_MAX_TOKENS = invalid('max_tokens: Field required');
const BAD_MAX_TOKENS = invalid('max_tokens: Input should be a valid integer greater than 0');

function isToolResultTurn(messages: readonly unknown[]): boolean {
  const last = messages[messages.length - 1] as { role?: unknown; content?: unknown } | undefined;
  if (last?.role !== 'user' || !Array.isArray(last.content)) return false;
  return last.content.some(
    (part: unknown) => (part as { type?: unknown } | null)?.type === 'tool_result',
  );
}

/** A vendor_a tool definition: `name` and `input_schema`. */
function offeredTool(definition: unknown): OfferedTool | undefined {
  const tool = definition as { name?: unknown; input_schema?: unknown } | null;
  return typeof tool?.name === 'string'
    ? { name: tool.name, schema: tool.input_schema }
    : undefined;
}

/** The tool to call, or undefined when the answer is text (no tools, "none", or a tool result). */
function chosenTool(body: JsonObject): OfferedTool | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return undefined;
  const choice = body.tool_choice as { type?: unknown; name?: unknown } | null | undefined;
  if (choice?.type === 'none') return undefined;
  if (isToolResultTurn(Array.isArray(body.messages) ? body.messages : [])) return undefined;
  const named = choice?.type === 'tool' ? choice.name : undefined;
  return namedOrFirstTool(body.tools, named, offeredTool);
}

/** The generated tool call, unless max tokens cannot hold it (then the answer is text). */
const plannedToolCall = (plan: AnswerPlan): ToolCallOutput | undefined =>
  fittingToolCall(chosenTool(plan.body), plan.maxTokens);

/**
 * How the usage says the call was served: the standard tier, unless the request's directives
 * name another tier, a speed or a geography (the directive's value is lower-case letters).
 */
const servedFields = ({ serviceTier, speed, inferenceGeo }: MockServedAs): string =>
  `"service_tier":"${serviceTier ?? 'standard'}"` +
  (speed === undefined ? '' : `,"speed":"${speed}"`) +
  (inferenceGeo === undefined ? '' : `,"inference_geo":"${inferenceGeo}"`);

const usageOf = (plan: AnswerPlan, outputTokens: number): string =>
  `{"input_tokens":${plan.inputTokens},"cache_creation_input_tokens":0,` +
  `"cache_read_input_tokens":0,"output_tokens":${outputTokens},${servedFields(plan.servedAs)}}`;

function completion(plan: AnswerPlan): string {
  const call = plannedToolCall(plan);
  const content = call
    ? [{ type: 'tool_use', id: mockId('toolu_'), name: call.name, input: call.input }]
    : [{ type: 'text', text: outputText(plan.outputTokens) }];
  const stopReason = call ? 'tool_use' : plan.limitedByMax ? 'max_tokens' : 'end_turn';
  const message = {
    id: mockId('msg_'),
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
  };
  const outputTokens = call ? call.outputTokens : plan.outputTokens;
  return withUsageJson(message, usageOf(plan, outputTokens));
}

const wordEvent = renderedWords(
  (word) =>
    `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(word)}}}\n\n`,
);
const TEXT_BLOCK_START =
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const PING = 'event: ping\ndata: {"type":"ping"}\n\n';
const BLOCK_STOP = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

function streamEvents(plan: AnswerPlan): StreamEvents {
  const call = plannedToolCall(plan);
  const events: string[] = [
    'event: message_start\ndata: {"type":"message_start","message":' +
      `{"id":"${mockId('msg_')}","type":"message","role":"assistant",` +
      `"model":${JSON.stringify(plan.model)},"content":[],"stop_reason":null,` +
      `"stop_sequence":null,"usage":${usageOf(plan, 1)}}}\n\n`,
  ];
  let stopReason: string;
  let outputTokens: number;
  let tokenEventCount: number;
  if (call) {
    const block = { type: 'tool_use', id: mockId('toolu_'), name: call.name, input: {} };
    events.push(
      `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":${JSON.stringify(block)}}\n\n`,
      PING,
    );
    for (const fragment of call.argumentDeltas) {
      events.push(
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(fragment)}}}\n\n`,
      );
    }
    stopReason = 'tool_use';
    outputTokens = call.outputTokens;
    tokenEventCount = call.argumentDeltas.length;
  } else {
    events.push(TEXT_BLOCK_START, PING);
    for (let index = 0; index < plan.outputTokens; index += 1) events.push(wordEvent(index));
    stopReason = plan.limitedByMax ? 'max_tokens' : 'end_turn';
    outputTokens = plan.outputTokens;
    tokenEventCount = plan.outputTokens;
  }
  events.push(
    BLOCK_STOP,
    'event: message_delta\ndata: {"type":"message_delta","delta":' +
      `{"stop_reason":"${stopReason}","stop_sequence":null},"usage":{"output_tokens":${outputTokens}}}\n\n`,
    MESSAGE_STOP,
  );
  return { events, firstTokenEvent: 3, tokenEventCount };
}

function invalidRequest(body: JsonObject): MockError | undefined {
  if (typeof body.model !== 'string') return MISSING_MODEL;
  if (!Array.isArray(body.messages)) return MISSING_MESSAGES;
  if (body.max_tokens === undefined) return MISSING_MAX_TOKENS;
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)
    return BAD_MAX_TOKENS;
  return undefined;
}

export const vendorA: MockProtocol = {
  requestIdHeader: 'request-id',
  apiKey(headers: MockHeaders) {
    return headers.xApiKey !== '' ? headers.xApiKey : bearerToken(headers.authorization);
  },
  inputTexts: messagesTexts,
  invalidRequest,
  error: faultAnswers(ERRORS, rateLimit),
  invalidJson: invalid('There was an issue with the JSON body of your request.'),
  notFound: error('404 Not Found', 'not_found_error', 'Not found'),
  tooLarge: error(
    '413 Payload Too Large',
    'request_too_large',
    'Request exceeds the maximum allowed number of bytes.',
  ),
  completion,
  streamEvents,
  streamErrorEvent:
    'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
  hugeEvent: renderedOnce(
    (text) =>
      `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${text}"}}\n\n`,
  ),
};

export const VENDOR_A_MODELS = [
  'claude-haiku-4-5',
  'claude-sonnet-4-6',
  'claude-opus-4-6',
] as const;

/** GET /v1/models in vendor_a's list format (static: serialised once). */
export const vendorAModelsBody = JSON.stringify({
  data: VENDOR_A_MODELS.map((id) => ({
    type: 'model',
    id,
    display_name: id,
    created_at: '2025-01-01T00:00:00Z',
  })),
  has_more: false,
  first_id: VENDOR_A_MODELS[0],
  last_id: VENDOR_A_MODELS[VENDOR_A_MODELS.length - 1],
});

/** count_tokens answers the request's input tokens, as its messages usage would report them. */
export const countTokensBody = (
  body: JsonObject,
  countInput: (texts: string[]) => number,
): string => `{"input_tokens":${countInput(messagesTexts(body))}}`;

export const countTokensInvalid = (body: JsonObject): MockError | undefined =>
  typeof body.model !== 'string'
    ? MISSING_MODEL
    : Array.isArray(body.messages)
      ? undefined
      : MISSING_MESSAGES;
