// Reads token usage from chat-completions answers.
import { isTokenCount, type TokenUsage } from '../common/usage.js';

/** Usage from a chat.completion object or a usage chunk, if present and well-formed. */
export function readChatCompletionsUsage(payload: unknown): TokenUsage | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const usage = (payload as { usage?: unknown }).usage;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const { prompt_tokens: input, completion_tokens: output } = usage as Record<string, unknown>;
  if (!isTokenCount(input) || !isTokenCount(output)) return undefined;
  return { inputTokens: input, outputTokens: output };
}
