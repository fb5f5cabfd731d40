// Reads token usage from chat-completions answers.
import { isTokenCount, type TokenUsage } from '../common/usage.js';
import { isJsonContainer } from '../../json-shapes.js';

/**
 * Usage from a chat.completion object or a usage chunk, if present and well-formed. The
 * vendor's prompt cache is automatic: `prompt_tokens` counts every prompt token, and
 * `prompt_tokens_details.cached_tokens` the part read from the cache (billed at its own price,
 * decision 324; never more than the prompt, whatever a vendor sends). It writes at no premium.
 */
export function readChatCompletionsUsage(payload: unknown): TokenUsage | undefined {
  if (!isJsonContainer(payload)) return undefined;
  const usage = (payload as { usage?: unknown }).usage;
  if (!isJsonContainer(usage)) return undefined;
  const {
    prompt_tokens: input,
    completion_tokens: output,
    prompt_tokens_details: details,
  } = usage as Record<string, unknown>;
  if (!isTokenCount(input) || !isTokenCount(output)) return undefined;
  const cached = isJsonContainer(details)
    ? (details as { cached_tokens?: unknown }).cached_tokens
    : undefined;
  return {
    inputTokens: input,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: isTokenCount(cached) ? Math.min(cached, input) : 0,
    outputTokens: output,
    webSearchRequests: 0,
  };
}
