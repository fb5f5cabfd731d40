// Reads token usage from messages-protocol answers and stream events.
import { EventRelay } from '../common/event-relay.js';
import { isTokenCount, type TokenUsage } from '../common/usage.js';

interface UsageShape {
  input_tokens?: unknown;
  output_tokens?: unknown;
}

/** Usage of a whole `message` object, if present and well-formed. */
export function readMessagesUsage(payload: unknown): TokenUsage | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const usage = (payload as { usage?: UsageShape }).usage;
  if (!usage || !isTokenCount(usage.input_tokens) || !isTokenCount(usage.output_tokens))
    return undefined;
  return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens };
}

/**
 * Accumulates usage over a stream: input tokens arrive in `message_start`, the output count in
 * each `message_delta` (cumulative). Complete once a message_delta has been seen.
 */
export class MessagesStreamUsage {
  private inputTokens: number | undefined;
  private outputTokens: number | undefined;

  observe(event: { type?: unknown; message?: { usage?: UsageShape }; usage?: UsageShape }): void {
    if (event.type === 'message_start' && isTokenCount(event.message?.usage?.input_tokens)) {
      this.inputTokens = event.message.usage.input_tokens;
    } else if (event.type === 'message_delta' && isTokenCount(event.usage?.output_tokens)) {
      this.outputTokens = event.usage.output_tokens;
      if (isTokenCount(event.usage.input_tokens)) this.inputTokens = event.usage.input_tokens;
    }
  }

  /** Input tokens from `message_start`, known before the output count. */
  get inputTokensSeen(): number | undefined {
    return this.inputTokens;
  }

  get usage(): TokenUsage | undefined {
    if (this.inputTokens === undefined || this.outputTokens === undefined) return undefined;
    return { inputTokens: this.inputTokens, outputTokens: this.outputTokens };
  }
}

/** A relay of a messages-protocol stream: its usage is what the stream's events reported. */
export abstract class MessagesUsageRelay extends EventRelay {
  protected readonly tracker = new MessagesStreamUsage();

  get usage(): TokenUsage | undefined {
    return this.tracker.usage;
  }

  get reportedInputTokens(): number | undefined {
    return this.tracker.inputTokensSeen;
  }
}
