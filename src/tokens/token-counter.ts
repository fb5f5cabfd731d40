// Counts input tokens. Large inputs go to piscina worker threads so the event loop never
// tokenizes a big prompt; small ones (most chat turns, a few microseconds of work) are counted
// inline, because a worker round trip costs more than the counting itself.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { countInputTokens, countTextTokens } from './count.js';

function totalChars(texts: readonly string[]): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return chars;
}

export interface TokenCounter {
  /** Tokens of a request's input: the texts plus per-message overheads. */
  countInput(texts: readonly string[]): Promise<number>;
  /** Tokens of generated text (no overheads): used when a stream ends without usage. */
  countOutput(texts: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

/** Inputs up to this many characters are counted inline (≈0.2 ms of BPE at worst). */
export const INLINE_COUNT_MAX_CHARS = 8 * 1024;

function workerFile(): string {
  const beside = fileURLToPath(new URL('./worker.js', import.meta.url));
  if (existsSync(beside)) return beside;
  // Running from TypeScript sources (tests): use the compiled worker.
  return fileURLToPath(new URL('../../dist/src/tokens/worker.js', import.meta.url));
}

export class PiscinaTokenCounter implements TokenCounter {
  private readonly pool: Piscina;

  constructor(threads: number) {
    this.pool = new Piscina({ filename: workerFile(), minThreads: 1, maxThreads: threads });
  }

  async countInput(texts: readonly string[]): Promise<number> {
    if (totalChars(texts) <= INLINE_COUNT_MAX_CHARS) return countInputTokens(texts);
    return (await this.pool.run(texts, { name: 'countInput' })) as number;
  }

  async countOutput(texts: readonly string[]): Promise<number> {
    const text = texts.join('');
    if (text.length <= INLINE_COUNT_MAX_CHARS) return countTextTokens(text);
    return (await this.pool.run(text, { name: 'countOutput' })) as number;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
