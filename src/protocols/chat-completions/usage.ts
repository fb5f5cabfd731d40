// Reads token usage, and the tier the vendor served at, from chat-completions answers.
import {
  ServedTierTracker,
  unpricedTiers,
  type ServedTierField,
  type UnpricedTier,
} from '../common/served-tiers.js';
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

/**
 * The tier a chat-completions vendor names on its answer and on every stream chunk (the usage
 * chunk too): `service_tier`, the tier it served at. `default` is the standard rates; `auto`
 * is a request's value, so an answer naming it is not read as standard (decision 342).
 */
const SERVED_TIERS: readonly ServedTierField[] = [
  { field: 'service_tier', standard: ['default'], known: ['flex', 'scale', 'priority'] },
];

/** The tier a chat.completion object or chunk names, if gw's prices do not cover it. */
export function readChatCompletionsUnpricedTiers(payload: unknown): UnpricedTier[] | undefined {
  return unpricedTiers(SERVED_TIERS, payload);
}

/** Follows the tier a stream's parsed chunks name. */
export const chatCompletionsTierTracker = (): ServedTierTracker =>
  new ServedTierTracker(SERVED_TIERS);
