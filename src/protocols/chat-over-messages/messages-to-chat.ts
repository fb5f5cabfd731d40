// Translates messages-protocol answers back into chat completions: the whole
// message for JSON answers, and event by event for streams (text deltas → content deltas,
// tool_use blocks and input_json_delta → tool_call deltas, message_delta → finish_reason).
import { parseEventData } from '../common/event-relay.js';
import type { SseEvent } from '../common/sse.js';
import type { TokenUsage } from '../common/usage.js';
import { DONE_EVENT } from '../chat-completions/stream-relay.js';
import {
  MessagesUsageRelay,
  readMessagesUsage,
  type MessagesStreamUsage,
} from '../messages/usage.js';
import type { JsonObject } from '../../json-shapes.js';

const FINISH_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function finishReason(stopReason: unknown): string {
  return (typeof stopReason === 'string' && FINISH_REASONS[stopReason]) || 'stop';
}

/** The chat protocol's usage: the prompt's cache reads are its `cached_tokens`, as the
 * chat-completions vendor reports its own. */
function usageObject(usage: TokenUsage): JsonObject {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
  };
}

interface MessageShape {
  id?: unknown;
  model?: unknown;
  content?: Array<{
    type?: unknown;
    text?: unknown;
    id?: unknown;
    name?: unknown;
    input?: unknown;
  }>;
  stop_reason?: unknown;
}

/** A chat.completion object for a messages-protocol message. */
export function messageToChatCompletion(message: MessageShape): JsonObject {
  const blocks = Array.isArray(message.content) ? message.content : [];
  const text = blocks
    .filter((block) => block.type === 'text')
    .map((block) => String(block.text ?? ''))
    .join('');
  const toolCalls = blocks
    .filter((block) => block.type === 'tool_use')
    .map((block) => ({
      id: String(block.id ?? ''),
      type: 'function',
      function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) },
    }));
  const usage = readMessagesUsage(message);
  return {
    id: `chatcmpl-${String(message.id ?? '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: String(message.model ?? ''),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && toolCalls.length > 0 ? null : text,
          refusal: null,
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: finishReason(message.stop_reason),
      },
    ],
    ...(usage && { usage: usageObject(usage) }),
  };
}

interface EventShape {
  type?: unknown;
  index?: unknown;
  message?: {
    id?: unknown;
    model?: unknown;
    usage?: { input_tokens?: unknown; output_tokens?: unknown };
  };
  content_block?: { type?: unknown; id?: unknown; name?: unknown };
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown; stop_reason?: unknown };
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
  error?: { type?: unknown };
}

/**
 * A vendor `error` event mid-stream, as the chat-completions error event its clients raise.
 * Only the vendor's error type is kept: its message could echo request content.
 */
function streamErrorEvent(vendor: string, vendorType: unknown): string {
  const type = typeof vendorType === 'string' ? vendorType : 'api_error';
  return `data: ${JSON.stringify({
    error: {
      code: 'gw_upstream_error',
      type,
      message: `${vendor} failed mid-stream (${type}); the answer is incomplete`,
    },
  })}\n\n`;
}

/** Relays a messages-protocol stream to a chat-completions client as chat.completion.chunk events. */
export class MessagesToChatStreamRelay extends MessagesUsageRelay {
  readonly finalEvent = DONE_EVENT;
  private readonly created = Math.floor(Date.now() / 1000);
  private id = 'chatcmpl-';
  private model = '';
  /** Messages content block index → chat tool_call index. */
  private readonly toolIndexByBlock = new Map<number, number>();

  constructor(
    private readonly vendor: string,
    private readonly clientWantsUsage: boolean,
    maxEventBytes?: number,
  ) {
    super(maxEventBytes);
  }

  protected relayEvent(sse: SseEvent): string {
    const payload = parseEventData(sse);
    if (payload === undefined) return '';
    const event = payload as EventShape;
    this.tracker.observe(event as Parameters<MessagesStreamUsage['observe']>[0]);
    return this.translateEvent(event);
  }

  private chunk(delta: JsonObject, finish: string | null = null): string {
    return this.chunkEvent({
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  }

  /** A chat.completion.chunk SSE event: the stream's id, created and model, then `fields`. */
  private chunkEvent(fields: JsonObject): string {
    return `data: ${JSON.stringify({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      ...fields,
    })}\n\n`;
  }

  private translateEvent(event: EventShape): string {
    switch (event.type) {
      case 'message_start':
        this.id = `chatcmpl-${String(event.message?.id ?? '')}`;
        this.model = String(event.message?.model ?? '');
        return this.chunk({ role: 'assistant', content: '' });
      case 'content_block_start': {
        if (event.content_block?.type !== 'tool_use') return '';
        const toolIndex = this.toolIndexByBlock.size;
        this.toolIndexByBlock.set(Number(event.index), toolIndex);
        return this.chunk({
          tool_calls: [
            {
              index: toolIndex,
              id: String(event.content_block.id ?? ''),
              type: 'function',
              function: { name: String(event.content_block.name ?? ''), arguments: '' },
            },
          ],
        });
      }
      case 'content_block_delta': {
        const delta = event.delta;
        if (delta?.type === 'text_delta' && typeof delta.text === 'string') {
          this.relayedText.push(delta.text);
          return this.chunk({ content: delta.text });
        }
        if (delta?.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          this.relayedText.push(delta.partial_json);
          const index = this.toolIndexByBlock.get(Number(event.index)) ?? 0;
          return this.chunk({
            tool_calls: [{ index, function: { arguments: delta.partial_json } }],
          });
        }
        return '';
      }
      case 'message_delta':
        return this.chunk({}, finishReason(event.delta?.stop_reason));
      case 'message_stop': {
        this.done = true;
        const usage = this.tracker.usage;
        if (!this.clientWantsUsage || !usage) return '';
        return this.chunkEvent({ choices: [], usage: usageObject(usage) });
      }
      case 'error':
        this.vendorErrorSeen = true;
        return streamErrorEvent(this.vendor, event.error?.type);
      default:
        return ''; // ping, content_block_stop: nothing to say in chat terms
    }
  }
}
