// What the inference routes answer with 200, for /openapi.json: the chat.completion and the
// message objects as the official chat-completions and messages clients type them (fields the
// vendor adds pass through: every object is open), and what their event streams carry. A
// provider that speaks the client's protocol answers through gw unchanged; one that does not
// is translated into it (src/protocols/chat-over-messages/messages-to-chat.ts).
import { z } from 'zod';

const tokens = z.number().int().min(0);

const functionToolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string(),
    arguments: z.string().describe('the arguments as JSON-encoded text: validate before use'),
  }),
});
const customToolCall = z.looseObject({
  id: z.string(),
  type: z.literal('custom'),
  custom: z.looseObject({ name: z.string(), input: z.string() }),
});

const chatCompletionUsage = z.looseObject({
  prompt_tokens: tokens,
  completion_tokens: tokens,
  total_tokens: tokens,
  prompt_tokens_details: z.looseObject({ cached_tokens: tokens.optional() }).optional(),
  completion_tokens_details: z.looseObject({}).optional(),
});

/** The chat.completion object (`stream` false or absent). */
export const chatCompletionSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int().describe('Unix seconds'),
    model: z.string().describe("the vendor's name of the model that answered"),
    choices: z.array(
      z.looseObject({
        index: z.number().int().min(0),
        message: z.looseObject({
          role: z.literal('assistant'),
          content: z.string().nullable().describe('null when the answer is only tool calls'),
          refusal: z.string().nullable(),
          tool_calls: z.array(z.union([functionToolCall, customToolCall])).optional(),
        }),
        logprobs: z.looseObject({}).nullable(),
        finish_reason: z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']),
      }),
    ),
    usage: chatCompletionUsage.optional(),
    service_tier: z.string().nullable().optional(),
    system_fingerprint: z.string().optional(),
  })
  .describe('the chat.completion object');

export const CHAT_COMPLETION_EVENTS =
  'With `stream: true`: Server-Sent Events, each `data: ` a chat.completion.chunk (`id`, `object: "chat.completion.chunk"`, `created`, `model`, `choices[].delta` with `role`, `content` or `tool_calls` pieces, `choices[].finish_reason` on the last), and with `stream_options.include_usage: true` a last chunk with empty `choices` and `usage`; then `data: [DONE]`. A vendor failure mid-stream is a `data: {"error": {…}}` event; a stream that closes without `data: [DONE]` is incomplete. Lines starting with `:` are keep-alive comments.';

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
});
const otherBlock = z
  .looseObject({ type: z.string() })
  .describe(
    'another block as the vendor sends it (thinking, redacted_thinking, server_tool_use, web_search_tool_result, …)',
  );

/** The message object (`stream` false or absent). */
export const messageSchema = z
  .looseObject({
    id: z.string(),
    type: z.literal('message'),
    role: z.literal('assistant'),
    content: z.array(z.union([textBlock, toolUseBlock, otherBlock])),
    model: z.string().describe("the vendor's name of the model that answered"),
    stop_reason: z
      .enum([
        'end_turn',
        'max_tokens',
        'stop_sequence',
        'tool_use',
        'pause_turn',
        'refusal',
        'model_context_window_exceeded',
      ])
      .nullable(),
    stop_sequence: z.string().nullable(),
    usage: z.looseObject({
      input_tokens: tokens,
      output_tokens: tokens,
      cache_creation_input_tokens: tokens.nullable().optional(),
      cache_read_input_tokens: tokens.nullable().optional(),
      server_tool_use: z.looseObject({}).nullable().optional(),
      service_tier: z.string().nullable().optional(),
    }),
  })
  .describe('the message object');

export const MESSAGE_EVENTS =
  'With `stream: true`: Server-Sent Events, each an `event: <type>` line and a `data: ` JSON object of that `type`: `message_start` (the message without its content), then per content block `content_block_start`, `content_block_delta` (`text_delta`, `input_json_delta`, …) and `content_block_stop`, then `message_delta` (`stop_reason`, output `usage`) and `message_stop`; `ping` events may come between. A vendor failure mid-stream is an `error` event; a stream that closes without `message_stop` is incomplete. Lines starting with `:` are keep-alive comments.';
