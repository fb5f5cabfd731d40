// vendor_b (chat completions) wire format for the mock: completions, chunks, errors, models.
import { randomBytes } from 'node:crypto';
import { countTextTokens } from '../tokens/count.js';
import type { MockFault } from './behaviour.js';
import { fragments, outputWords, valueForSchema } from './output.js';
import type { MockAnswer, MockError, MockRequest } from './types.js';

type JsonObject = Record<string, unknown>;

interface ToolDefinition {
  function?: { name?: string; parameters?: Parameters<typeof valueForSchema>[0] };
}

function chosenTool(body: JsonObject): ToolDefinition | undefined {
  const tools = Array.isArray(body.tools) ? (body.tools as ToolDefinition[]) : [];
  if (tools.length === 0 || body.tool_choice === 'none') return undefined;
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: unknown }>) : [];
  if (messages.at(-1)?.role === 'tool') return undefined; // answer the tool result with text
  const choice = body.tool_choice as { function?: { name?: string } } | undefined;
  const named = typeof choice === 'object' ? choice?.function?.name : undefined;
  return tools.find((tool) => tool.function?.name === named) ?? tools[0];
}

export function vendorBAnswer(request: MockRequest): MockAnswer {
  const { body, inputTokens, outputTokens, limitedByMax } = request;
  const id = `chatcmpl-mock${randomBytes(9).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const model = String(body.model ?? 'mock');
  const wantsUsage =
    (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const tool = chosenTool(body);
  const base = {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: 'fp_mock',
  };
  const chunk = (delta: JsonObject, finishReason: string | null = null): string =>
    `data: ${JSON.stringify({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(wantsUsage && { usage: null }),
    })}\n\n`;

  let message: JsonObject;
  let completionTokens: number;
  let finishReason: string;
  const events: string[] = [];
  if (tool) {
    const callId = `call_mock${randomBytes(8).toString('hex')}`;
    const name = tool.function?.name ?? 'tool';
    const args = JSON.stringify(valueForSchema(tool.function?.parameters ?? { type: 'object' }));
    completionTokens = countTextTokens(name) + countTextTokens(args);
    finishReason = 'tool_calls';
    message = {
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [{ id: callId, type: 'function', function: { name, arguments: args } }],
    };
    events.push(
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }],
      }),
    );
    for (const part of fragments(args, 4))
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
  } else {
    const words = outputWords(outputTokens);
    completionTokens = words.length;
    finishReason = limitedByMax ? 'length' : 'stop';
    message = { role: 'assistant', content: words.join('').trimStart(), refusal: null };
    events.push(chunk({ role: 'assistant', content: '', refusal: null }));
    words.forEach((word, index) =>
      events.push(chunk({ content: index === 0 ? word.trimStart() : word })),
    );
  }
  events.push(chunk({}, finishReason));
  const usage = {
    prompt_tokens: inputTokens,
    completion_tokens: completionTokens,
    total_tokens: inputTokens + completionTokens,
  };
  if (wantsUsage) events.push(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
  events.push('data: [DONE]\n\n');

  return {
    json: {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage,
      system_fingerprint: 'fp_mock',
    },
    events,
  };
}

export function vendorBError(fault: Exclude<MockFault, 'cut_stream'>): MockError {
  const error = (
    status: number,
    type: string,
    code: string | null,
    message: string,
    headers: Record<string, string> = {},
  ): MockError => ({
    status,
    headers,
    body: { error: { message, type, param: null, code } },
  });
  switch (fault) {
    case 'bad_key':
      return error(401, 'invalid_request_error', 'invalid_api_key', 'Incorrect API key provided.');
    case 'rate_limit':
      return error(429, 'requests', 'rate_limit_exceeded', 'Rate limit reached for requests.', {
        'retry-after': '2',
      });
    case 'quota':
      return error(
        429,
        'insufficient_quota',
        'insufficient_quota',
        'You exceeded your current quota, please check your plan and billing details.',
      );
    case 'server_error':
      return error(
        500,
        'server_error',
        null,
        'The server had an error while processing your request.',
      );
    case 'overloaded':
      return error(
        529,
        'server_error',
        'overloaded',
        'The engine is currently overloaded, please try again later.',
      );
  }
}

export function vendorBModels(modelIds: readonly string[]): JsonObject {
  return {
    object: 'list',
    data: modelIds.map((id) => ({
      id,
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'vendor_b',
    })),
  };
}
