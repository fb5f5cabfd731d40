// Token usage as vendors report it, normalized.

/**
 * A prompt's tokens as the vendor billed them: `inputTokens` in all, of which its prompt cache
 * wrote `cacheWriteTokens` and read `cacheReadTokens` (each a part of `inputTokens`, priced
 * apart: decision 324). `cacheWrite1hTokens` is the part of the writes kept for an hour, which
 * vendor_a bills at a higher rate than its five-minute writes.
 */
export interface PromptTokens {
  readonly inputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheWrite1hTokens: number;
  readonly cacheReadTokens: number;
}

/**
 * The prompt-cache write a request may make the vendor bill: none, a write, or a write kept an
 * hour (vendor_a's `cache_control.ttl: "1h"`).
 */
export type PromptCacheWrite = 'none' | 'write' | 'write_1h';

export interface TokenUsage extends PromptTokens {
  readonly outputTokens: number;
  /** Searches the vendor's web search server tool made (billed per use; decision 327). */
  readonly webSearchRequests: number;
}

/** A prompt with no part written to or read from a prompt cache. */
export function uncachedPrompt(inputTokens: number): PromptTokens {
  return { inputTokens, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0 };
}

/** A prompt's usage with its output (and the web searches it took). */
export function withOutput(
  prompt: PromptTokens,
  outputTokens: number,
  webSearchRequests = 0,
): TokenUsage {
  return {
    inputTokens: prompt.inputTokens,
    cacheWriteTokens: prompt.cacheWriteTokens,
    cacheWrite1hTokens: prompt.cacheWrite1hTokens,
    cacheReadTokens: prompt.cacheReadTokens,
    outputTokens,
    webSearchRequests,
  };
}

/**
 * The most tokens one count may name: far above any model's context, and four of them (the
 * prompt's three parts and the output) still fit the ledger's integer columns. A vendor's count
 * above it is read as malformed (as a missing one is), not written where it cannot land.
 */
export const MAX_TOKEN_COUNT = 100_000_000;

export function isTokenCount(value: unknown): value is number {
  return (
    typeof value === 'number' &&
    Number.isSafeInteger(value) &&
    value >= 0 &&
    value <= MAX_TOKEN_COUNT
  );
}
