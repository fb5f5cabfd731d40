// Token usage as vendors report it, normalized.

export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export function isTokenCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
