// Token counting shared by the gateway (in workers for large inputs) and the mock vendors.
// One tokenizer (o200k_base BPE) for every model: the gateway's estimate and the mock
// vendors' reported usage come from the same function, so an estimate is never below what
// the mock reports. Real vendors tokenize differently; estimates are upper bounds by design
// (max output is reserved), and settlement always uses the vendor's reported usage.
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/** Fixed per-message overhead (role markers, separators), as chat formats add. */
export const TOKENS_PER_MESSAGE = 4;
/** Tokens that prime the assistant's reply. */
export const TOKENS_PER_REPLY = 3;

export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/**
 * Counts the input tokens of a list of texts that make up one request: each entry is one
 * message's (or the system prompt's, or a tool schema's) text. Overheads are per entry.
 */
export function countInputTokens(texts: readonly string[]): number {
  let total = TOKENS_PER_REPLY;
  for (const text of texts) total += TOKENS_PER_MESSAGE + countTextTokens(text);
  return total;
}
