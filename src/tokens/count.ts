// Token counting shared by the gateway (in workers for large inputs) and the mock vendors.
// One tokenizer (o200k_base BPE) for every model: the gateway's estimate and the mock
// vendors' reported usage come from the same function, so an estimate is never below what
// the mock reports. Real vendors tokenize differently; estimates are upper bounds by design
// (max output is reserved), and settlement always uses the vendor's reported usage.
//
// Bounded and linear (decision "Token estimates are bounded: long runs and text past a budget
// count as bytes"): BPE is quadratic in the length of one pre-tokenized piece, so a long
// unbroken run (of letters, CJK, punctuation or whitespace) is never given to it; such a run,
// and all text past a per-request budget, counts as its UTF-8 bytes. Every byte-level BPE
// token is at least one byte, so the byte count is a safe upper bound of any vendor's count.
import { BpeCounter, BpeTable } from './bpe.js';

/** One table and counter per thread (the event loop's, and each counting thread's). */
const bpe = new BpeCounter(BpeTable.load());

/** Fixed per-message overhead (role markers, separators), as chat formats add. */
export const TOKENS_PER_MESSAGE = 4;
/** Tokens that prime the assistant's reply. */
export const TOKENS_PER_REPLY = 3;
/** A run of whitespace or of non-whitespace longer than this counts as its bytes. */
export const LONG_RUN_CHARS = 128;
/** Characters of one request tokenized by BPE; the rest counts as its bytes. */
export const BPE_BUDGET_CHARS = 32 * 1024;

/** How many characters of BPE one request may still spend. */
export class CountBudget {
  constructor(public remainingChars: number = BPE_BUDGET_CHARS) {}
}

// Maximal runs of whitespace or of non-whitespace; surrogate pairs are never split.
const RUN = /\s+|\S+/y;

function utf8Bytes(text: string, start: number, end: number): number {
  return Buffer.byteLength(text.slice(start, end), 'utf8');
}

/** An upper bound of the tokens of `text`, linear in its length. */
export function countTextTokens(text: string, budget: CountBudget = new CountBudget()): number {
  let tokens = 0;
  let batchStart = 0; // start of the text not yet counted (a run boundary)
  let position = 0;
  while (position < text.length) {
    if (budget.remainingChars <= 0) {
      tokens += batchTokens(text, batchStart, position);
      tokens += utf8Bytes(text, position, text.length);
      return tokens;
    }
    // test(), not exec(): only where the run ends is needed, and exec() allocates a match
    // array and the run's string for every word of every request.
    RUN.lastIndex = position;
    RUN.test(text);
    const runEnd = RUN.lastIndex;
    if (runEnd - position > LONG_RUN_CHARS) {
      tokens += batchTokens(text, batchStart, position);
      tokens += utf8Bytes(text, position, runEnd);
      batchStart = runEnd;
    } else {
      budget.remainingChars -= runEnd - position;
    }
    position = runEnd;
  }
  return tokens + batchTokens(text, batchStart, text.length);
}

/** BPE tokens of `text[start, end)` (none when empty). */
function batchTokens(text: string, start: number, end: number): number {
  return end > start ? bpe.count(text.slice(start, end)) : 0;
}

/**
 * Counts the input tokens of a list of texts that make up one request: each entry is one
 * message's (or the system prompt's, or a tool schema's) text. Overheads are per entry; one
 * BPE budget covers the whole request.
 */
export function countInputTokens(texts: readonly string[]): number {
  const budget = new CountBudget();
  let total = TOKENS_PER_REPLY;
  for (const text of texts) total += TOKENS_PER_MESSAGE + countTextTokens(text, budget);
  return total;
}

/** Tokens of generated text (no overheads), bounded like the input. */
export function countOutputTokens(text: string): number {
  return countTextTokens(text, new CountBudget());
}
