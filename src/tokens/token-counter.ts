// Counts input tokens. Inputs past a few hundred characters go to piscina worker threads so
// the event loop never tokenizes a prompt (BPE costs up to a few µs per character of text);
// tiny ones are counted inline, because a worker round trip costs more than counting them. Counting is bounded per request (see count.ts) and a count is
// cancelled with its request: once its client has gone, nothing waits for it any more.
// The threads are shared fairly between organizations (fair-scheduler.ts, decision 351): each
// waits in its own lane, and one with TOKEN_QUEUE_PER_ORG counts waiting is refused more.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { gwError, type GwError } from '../errors.js';
import { countInputTokens, countOutputTokens } from './count.js';
import { DEFAULT_MAX_WAITING_PER_LANE, FairScheduler, type CountingFor } from './fair-scheduler.js';

export { CountCancelledError, type CountingFor } from './fair-scheduler.js';

function totalChars(texts: readonly string[]): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return chars;
}

/** Whom a count is for: the organization whose lane it waits in, and the client it serves. */
export interface CountFor {
  readonly orgId: string;
  /** When this client goes away, the count is cancelled (none: it always runs to its end). */
  readonly client?: CountingFor;
}

export interface TokenCounter {
  /**
   * Tokens of a request's input: the texts plus per-message overheads (an upper bound of
   * what the vendor will report). 429 gw_concurrency_limited when the organization already
   * has its most counts waiting on this instance. Rejects with an AbortError once the client
   * has gone.
   */
  countInput(texts: readonly string[], countFor?: CountFor): Promise<number | GwError>;
  /**
   * Tokens of generated text (no overheads): used when a stream ends without usage, to charge
   * it, so never refused (only a request already admitted and held for makes one).
   */
  countOutput(texts: readonly string[], countFor?: CountFor): Promise<number>;
  close(): Promise<void>;
}

/** Inputs up to this many characters are counted inline (well under a millisecond). */
export const INLINE_COUNT_MAX_CHARS = 256;

/** The lane of counts made for no organization (none in the gateway; tools and benches). */
const NO_ORG_LANE = '';

export interface TokenCounterOptions {
  /** Counts one organization may have waiting on this instance (TOKEN_QUEUE_PER_ORG). */
  readonly maxWaitingPerOrg?: number;
  /** Told of each count refused because its organization had that many waiting. */
  readonly onRefused?: () => void;
}

function workerFile(): string {
  const beside = fileURLToPath(new URL('./worker.js', import.meta.url));
  if (existsSync(beside)) return beside;
  // Running from TypeScript sources (tests): use the compiled worker.
  return fileURLToPath(new URL('../../dist/src/tokens/worker.js', import.meta.url));
}

export class PiscinaTokenCounter implements TokenCounter {
  private readonly pool: Piscina;
  private readonly scheduler: FairScheduler<number>;
  private readonly maxWaitingPerOrg: number;

  constructor(
    threads: number,
    private readonly options: TokenCounterOptions = {},
  ) {
    this.pool = new Piscina({ filename: workerFile(), minThreads: 1, maxThreads: threads });
    this.maxWaitingPerOrg = options.maxWaitingPerOrg ?? DEFAULT_MAX_WAITING_PER_LANE;
    this.scheduler = new FairScheduler({
      maxRunning: threads,
      maxWaitingPerLane: this.maxWaitingPerOrg,
    });
  }

  /** Counts waiting for a thread, every organization's (the metrics read it). */
  get waiting(): number {
    return this.scheduler.waiting;
  }

  countInput(texts: readonly string[], countFor?: CountFor): Promise<number | GwError> {
    if (totalChars(texts) <= INLINE_COUNT_MAX_CHARS)
      return Promise.resolve(countInputTokens(texts));
    const counted = this.scheduler.tryRun(
      countFor?.orgId ?? NO_ORG_LANE,
      () => this.pool.run(texts, { name: 'countInput' }) as Promise<number>,
      countFor?.client,
    );
    if (counted) return counted;
    this.options.onRefused?.();
    return Promise.resolve(
      gwError(
        'gw_concurrency_limited',
        `this organization already has ${this.maxWaitingPerOrg} requests waiting for their tokens to be counted on this gateway instance; retry shortly`,
        { headers: { 'retry-after': '1' } },
      ),
    );
  }

  countOutput(texts: readonly string[], countFor?: CountFor): Promise<number> {
    const text = texts.join('');
    if (text.length <= INLINE_COUNT_MAX_CHARS) return Promise.resolve(countOutputTokens(text));
    return this.scheduler.run(
      countFor?.orgId ?? NO_ORG_LANE,
      () => this.pool.run(text, { name: 'countOutput' }) as Promise<number>,
      countFor?.client,
    );
  }

  async close(): Promise<void> {
    this.scheduler.close();
    await this.pool.destroy();
  }
}
