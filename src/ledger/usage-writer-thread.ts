// Runs the usage batch writer on its own thread, so decoding stream entries and talking to
// Postgres take no time from the event loop that serves requests. The thread has its own
// Redis and Postgres connections; it reports its counters back to the gateway's metrics.
// If the thread dies it is started again: entries wait in the Redis stream meanwhile.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { RedisTarget } from '../redis/target.js';
import type { UsageWriterCounters, UsageWriterOptions } from './usage-writer.js';

export interface UsageWriterThreadSettings {
  /** The gateway's Redis (a single one or a cluster); the thread opens its own client. */
  readonly redis: RedisTarget;
  readonly databaseUrl: string;
  /** Bounds each wait of the thread on Postgres (USAGE_WRITE_TIMEOUT_MS). */
  readonly writeTimeoutMs: number;
  /**
   * REDIS_TIMEOUT_MS: the thread's commands wait as long as it takes (its blocking read must
   * not be cut), but a connection silent for twice this plus a read's block is replaced.
   * Unset: never.
   */
  readonly redisTimeoutMs?: number;
  readonly keyPrefix: string;
  readonly logLevel: string;
  readonly options: UsageWriterOptions;
}

/** Messages from the writer thread to the gateway. */
export type UsageWriterThreadMessage =
  | { readonly kind: 'rows_written'; readonly count: number }
  | { readonly kind: 'write_failed' }
  | { readonly kind: 'dead_lettered'; readonly count: number };

/** The message that asks the writer thread to finish its batch, drain once and exit. */
export const STOP_WRITER = 'stop';

const RESTART_DELAY_MS = 1000;
/** The thread's composition root lives beside src/gateway.ts (it wires the webhook events in). */
const WORKER_SCRIPT = new URL('../usage-writer-worker.js', import.meta.url);

export class UsageWriterThread {
  private worker: Worker | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: UsageWriterThreadSettings,
    private readonly counters: UsageWriterCounters,
    private readonly logger: Logger,
    /** The thread's entry script (tests substitute a stand-in). */
    private readonly script: URL = WORKER_SCRIPT,
    private readonly restartDelayMs = RESTART_DELAY_MS,
  ) {}

  start(): void {
    const worker = new Worker(this.script, { workerData: this.settings });
    this.worker = worker;
    worker.on('message', (message: UsageWriterThreadMessage) => {
      if (message.kind === 'rows_written') this.counters.usageRowsWritten.inc(message.count);
      else if (message.kind === 'write_failed') this.counters.usageWriteFailures.inc();
      else if (message.kind === 'dead_lettered') this.counters.usageDeadLetters.inc(message.count);
    });
    worker.on('error', (error) => this.logger.error({ err: error }, 'usage writer thread failed'));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      if (this.stopping) return;
      this.logger.error({ code }, 'usage writer thread exited; restarting it');
      this.restartTimer = setTimeout(() => this.start(), this.restartDelayMs);
    });
  }

  /** Asks the thread to write what it holds and drain the streams once; waits for it to exit. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage(STOP_WRITER);
    const timer = setTimeout(() => {
      this.logger.error('usage writer thread did not stop in time; entries stay in Redis');
      void worker.terminate();
    }, timeoutMs);
    await exited;
    clearTimeout(timer);
  }
}
