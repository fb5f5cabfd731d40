// Token usage as vendors report it, normalized.

/**
 * A prompt's tokens as the vendor billed them: `inputTokens` in all, of which its prompt cache
 * wrote `cacheWriteTokens` and read `cacheReadTokens` (each a part of `inputTokens`, priced
 * apart: decision 324).
 */
export interface PromptTokens {
  readonly inputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheReadTokens: number;
}

export interface TokenUsage extends PromptTokens {
  readonly outputTokens: number;
}

/** A prompt with no part written to or read from a prompt cache. */
export function uncachedPrompt(inputTokens: number): PromptTokens {
  return { inputTokens, cacheWriteTokens: 0, cacheReadTokens: 0 };
}

/** A prompt's usage with its output. */
export function withOutput(prompt: PromptTokens, outputTokens: number): TokenUsage {
  return {
    inputTokens: prompt.inputTokens,
    cacheWriteTokens: prompt.cacheWriteTokens,
    cacheReadTokens: prompt.cacheReadTokens,
    outputTokens,
  };
}

export function isTokenCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
