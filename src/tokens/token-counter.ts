// Counts input tokens. Inputs past a few hundred characters go to piscina worker threads so
// the event loop never tokenizes a prompt (gpt-tokenizer spends up to ~10 µs per character of
// text it has not seen); tiny ones are counted inline, because a worker round trip costs
// more than counting them. Counting is bounded per request (see count.ts) and a count is
// cancelled with its request: once the signal aborts, nothing waits for it any more.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { countInputTokens, countOutputTokens } from './count.js';

function totalChars(texts: readonly string[]): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return chars;
}

export interface TokenCounter {
  /**
   * Tokens of a request's input: the texts plus per-message overheads (an upper bound of
   * what the vendor will report). Rejects with an AbortError once `signal` aborts.
   */
  countInput(texts: readonly string[], signal?: AbortSignal): Promise<number>;
  /** Tokens of generated text (no overheads): used when a stream ends without usage. */
  countOutput(texts: readonly string[], signal?: AbortSignal): Promise<number>;
  close(): Promise<void>;
}

/** Inputs up to this many characters are counted inline (well under a millisecond). */
export const INLINE_COUNT_MAX_CHARS = 256;

/** What a count rejects with when its request went away. */
export class CountCancelledError extends Error {
  override readonly name = 'AbortError';
}

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

  countInput(texts: readonly string[], signal?: AbortSignal): Promise<number> {
    if (totalChars(texts) <= INLINE_COUNT_MAX_CHARS)
      return Promise.resolve(countInputTokens(texts));
    return this.runInWorker('countInput', texts, signal);
  }

  countOutput(texts: readonly string[], signal?: AbortSignal): Promise<number> {
    const text = texts.join('');
    if (text.length <= INLINE_COUNT_MAX_CHARS) return Promise.resolve(countOutputTokens(text));
    return this.runInWorker('countOutput', text, signal);
  }

  private async runInWorker(name: string, task: unknown, signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) throw new CountCancelledError('the request went away before counting');
    const counted = this.pool.run(task, { name }) as Promise<number>;
    if (!signal) return counted;
    // The work itself is bounded (a few ms, see count.ts); a request that goes away stops
    // waiting for it at once and its result is dropped. (piscina's own abort of a running
    // task races the worker's answer and can throw outside any promise.)
    return new Promise<number>((resolve, reject) => {
      const onAbort = (): void =>
        reject(new CountCancelledError('the request went away while counting'));
      signal.addEventListener('abort', onAbort, { once: true });
      counted.then(
        (tokens) => {
          signal.removeEventListener('abort', onAbort);
          resolve(tokens);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
