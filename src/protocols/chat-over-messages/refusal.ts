// What a chat request asks that the messages protocol cannot carry as asked: refused before
// admission, so nothing is held for an answer that could not match the estimate.

/** The fields of a chat request the check reads. */
export interface ChatRequestShape {
  readonly model: string;
  readonly tools?: unknown;
}

/**
 * The refusal message, or undefined. `n`: one choice would come back for the n asked and held.
 * A tool that is not a named function: the translation would have to invent its schema, which
 * the estimate never saw.
 */
export function chatOverMessagesRefusal(
  request: ChatRequestShape,
  choices: number,
): string | undefined {
  if (choices > 1) return `n: model ${request.model} serves one choice per request`;
  const tools: unknown[] = Array.isArray(request.tools) ? request.tools : [];
  for (const [index, tool] of tools.entries()) {
    const fn = (tool as { type?: unknown; function?: { name?: unknown } }).function;
    if ((tool as { type?: unknown }).type !== 'function' || typeof fn?.name !== 'string') {
      return `tools.${index}: model ${request.model} takes function tools with a name only`;
    }
  }
  return undefined;
}
