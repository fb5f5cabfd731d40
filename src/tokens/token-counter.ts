// Counts input tokens. Inputs past a few hundred characters go to piscina worker threads so
// the event loop never tokenizes a prompt (BPE costs up to a few µs per character of text);
// tiny ones are counted inline, because a worker round trip costs more than counting them. Counting is bounded per request (see count.ts) and a count is
// cancelled with its request: once its client has gone, nothing waits for it any more.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { countInputTokens, countOutputTokens } from './count.js';

function totalChars(texts: readonly string[]): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return chars;
}

/**
 * The client a count is made for (a route's HTTP response). Not an AbortSignal: Node's
 * AbortController, made for every request, kept each request's objects alive through young
 * garbage collections (about 30 MB promoted per 6 s at 10 k req/s; bench/RESULTS.md,
 * 2026-11-23), and only the rare count that goes to a worker needs to hear of the abort.
 */
export interface CountingFor {
  readonly aborted: boolean;
  /** Called once if the client goes away (at once if it already has). */
  onAborted(listener: () => void): void;
}

export interface TokenCounter {
  /**
   * Tokens of a request's input: the texts plus per-message overheads (an upper bound of
   * what the vendor will report). Rejects with an AbortError once `client` has gone.
   */
  countInput(texts: readonly string[], client?: CountingFor): Promise<number>;
  /** Tokens of generated text (no overheads): used when a stream ends without usage. */
  countOutput(texts: readonly string[], client?: CountingFor): Promise<number>;
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

  countInput(texts: readonly string[], client?: CountingFor): Promise<number> {
    if (totalChars(texts) <= INLINE_COUNT_MAX_CHARS)
      return Promise.resolve(countInputTokens(texts));
    return this.runInWorker('countInput', texts, client);
  }

  countOutput(texts: readonly string[], client?: CountingFor): Promise<number> {
    const text = texts.join('');
    if (text.length <= INLINE_COUNT_MAX_CHARS) return Promise.resolve(countOutputTokens(text));
    return this.runInWorker('countOutput', text, client);
  }

  private async runInWorker(name: string, task: unknown, client?: CountingFor): Promise<number> {
    if (client?.aborted) throw new CountCancelledError('the request went away before counting');
    const counted = this.pool.run(task, { name }) as Promise<number>;
    if (!client) return counted;
    // The work itself is bounded (a few ms, see count.ts); a request that goes away stops
    // waiting for it at once and its result is dropped. (piscina's own abort of a running
    // task races the worker's answer and can throw outside any promise.) An abort after the
    // count settled rejects a settled promise: nothing.
    return new Promise<number>((resolve, reject) => {
      client.onAborted(() =>
        reject(new CountCancelledError('the request went away while counting')),
      );
      counted.then(resolve, (error: unknown) =>
        reject(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
