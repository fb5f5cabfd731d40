// vendor_a (messages protocol) wire format for the mock: messages, events, errors, models.
import { randomBytes } from 'node:crypto';
import { countTextTokens } from '../tokens/count.js';
import type { MockFault } from './behaviour.js';
import { fragments, outputWords, valueForSchema } from './output.js';
import type { MockAnswer, MockError, MockRequest } from './types.js';

type JsonObject = Record<string, unknown>;

interface ToolDefinition {
  name?: string;
  input_schema?: Parameters<typeof valueForSchema>[0];
}

function isToolResultTurn(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  const last = messages.at(-1) as { role?: unknown; content?: unknown } | undefined;
  return (
    last?.role === 'user' &&
    Array.isArray(last.content) &&
    last.content.some((part: { type?: unknown }) => part?.type === 'tool_result')
  );
}

function chosenTool(body: JsonObject): ToolDefinition | undefined {
  const tools = Array.isArray(body.tools) ? (body.tools as ToolDefinition[]) : [];
  const choice = body.tool_choice as { type?: string; name?: string } | undefined;
  if (tools.length === 0 || choice?.type === 'none' || isToolResultTurn(body.messages))
    return undefined;
  return tools.find((tool) => choice?.type === 'tool' && tool.name === choice.name) ?? tools[0];
}

const sse = (type: string, data: JsonObject): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

export function vendorAAnswer(request: MockRequest): MockAnswer {
  const { body, inputTokens, outputTokens, limitedByMax } = request;
  const id = `msg_mock${randomBytes(10).toString('hex')}`;
  const model = String(body.model ?? 'mock');
  const tool = chosenTool(body);
  const events: string[] = [];
  let content: JsonObject[];
  let generated: number;
  let stopReason: string;

  events.push(
    sse('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    }),
  );
  if (tool) {
    const toolId = `toolu_mock${randomBytes(8).toString('hex')}`;
    const name = tool.name ?? 'tool';
    const input = valueForSchema(tool.input_schema ?? { type: 'object' });
    const json = JSON.stringify(input);
    generated = countTextTokens(name) + countTextTokens(json);
    stopReason = 'tool_use';
    content = [{ type: 'tool_use', id: toolId, name, input }];
    events.push(
      sse('content_block_start', {
        index: 0,
        content_block: { type: 'tool_use', id: toolId, name, input: {} },
      }),
    );
    events.push(sse('ping', {}));
    for (const part of fragments(json, 4)) {
      events.push(
        sse('content_block_delta', {
          index: 0,
          delta: { type: 'input_json_delta', partial_json: part },
        }),
      );
    }
  } else {
    const words = outputWords(outputTokens);
    generated = words.length;
    stopReason = limitedByMax ? 'max_tokens' : 'end_turn';
    content = [{ type: 'text', text: words.join('').trimStart() }];
    events.push(
      sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    );
    events.push(sse('ping', {}));
    words.forEach((word, index) => {
      events.push(
        sse('content_block_delta', {
          index: 0,
          delta: { type: 'text_delta', text: index === 0 ? word.trimStart() : word },
        }),
      );
    });
  }
  events.push(sse('content_block_stop', { index: 0 }));
  events.push(
    sse('message_delta', {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: generated },
    }),
  );
  events.push(sse('message_stop', {}));

  return {
    json: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: {
        input_tokens: inputTokens,
        output_tokens: generated,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    },
    events,
  };
}

export function vendorAError(
  fault: Exclude<MockFault, 'cut_stream'> | 'invalid_request',
  message?: string,
): MockError {
  const error = (
    status: number,
    type: string,
    text: string,
    headers: Record<string, string> = {},
  ): MockError => ({
    status,
    headers,
    body: { type: 'error', error: { type, message: text } },
  });
  switch (fault) {
    case 'bad_key':
      return error(401, 'authentication_error', 'invalid x-api-key');
    case 'rate_limit':
      return error(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit.', {
        'retry-after': '2',
      });
    case 'quota':
      // The vendor answers an exhausted prepaid balance with 402 billing_error.
      return error(402, 'billing_error', 'Your credit balance is too low to access the API.');
    case 'server_error':
      return error(500, 'api_error', 'Internal server error');
    case 'overloaded':
      return error(529, 'overloaded_error', 'Overloaded');
    case 'invalid_request':
      return error(400, 'invalid_request_error', message ?? 'invalid request');
  }
}

export function vendorAModels(modelIds: readonly string[]): JsonObject {
  const data = modelIds.map((id) => ({
    type: 'model',
    id,
    display_name: id,
    created_at: '2025-01-01T00:00:00Z',
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
