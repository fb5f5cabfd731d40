// The batch writer: drains every org's usage stream (Redis consumer group) into Postgres in
// batches, acknowledges only after commit, and claims entries left pending by instances that
// died. A slow Postgres slows this loop, never the request path.
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { USAGE_CONSUMER_GROUP, type RedisKeys } from '../redis/keys.js';
import type { PostgresUsageSink } from './postgres-usage-sink.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';

/** What the writer counts (GatewayMetrics' counters, or a relay from the writer thread). */
export interface UsageWriterCounters {
  readonly usageRowsWritten: { inc(count: number): void };
  readonly usageWriteFailures: { inc(): void };
}

export interface UsageWriterOptions {
  readonly consumerName: string;
  readonly batchMaxRows: number;
  readonly flushIntervalMs: number;
  readonly claimIdleMs: number;
}

type StreamEntry = [id: string, fields: string[]];
type StreamBatch = Array<[stream: string, entries: StreamEntry[]]>;

const REGISTRY_REFRESH_MS = 1000;
const RETRY_BACKOFF_MS = 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class UsageStreamWriter {
  private running = false;
  private loop: Promise<void> | undefined;
  private streams: string[] = [];
  private readonly groupsCreated = new Set<string>();
  private lastRegistryRefreshMs = 0;
  private lastClaimMs = 0;

  constructor(
    /** A dedicated connection: blocking reads must not stall the request path's client. */
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly sink: PostgresUsageSink,
    private readonly logger: Logger,
    private readonly metrics: UsageWriterCounters,
    private readonly options: UsageWriterOptions,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops after the batch in hand is written, then drains what is left once. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.drainOnce().catch((error: unknown) =>
      this.logger.error({ err: error }, 'usage writer: final drain failed; entries stay in Redis'),
    );
  }

  /** Reads and writes until the streams have nothing new (used at shutdown and in tests). */
  async drainOnce(): Promise<number> {
    await this.refreshStreams(true);
    let written = 0;
    for (;;) {
      const batch = await this.read(false);
      if (batch.length === 0) return written;
      written += await this.persist(batch);
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.refreshStreams(false);
        if (this.streams.length === 0) {
          await sleep(this.options.flushIntervalMs);
          continue;
        }
        if (Date.now() - this.lastClaimMs > this.options.claimIdleMs / 2) {
          this.lastClaimMs = Date.now();
          await this.claimStale();
        }
        const cycleStartedMs = Date.now();
        const batch = await this.read(true);
        if (batch.length === 0) continue;
        const rows = await this.persist(batch);
        // A batch that was not full: wait out the flush interval so the next one is bigger
        // (one insert per interval under load instead of one per request).
        const elapsedMs = Date.now() - cycleStartedMs;
        if (
          rows < this.options.batchMaxRows &&
          elapsedMs < this.options.flushIntervalMs &&
          this.running
        ) {
          await sleep(this.options.flushIntervalMs - elapsedMs);
        }
      } catch (error) {
        // A Redis that restarted empty has lost the consumer groups: create them again.
        if (String((error as Error).message).includes('NOGROUP')) this.groupsCreated.clear();
        this.logger.error({ err: error }, 'usage writer: iteration failed; retrying');
        await sleep(RETRY_BACKOFF_MS);
      }
    }
  }

  private async refreshStreams(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastRegistryRefreshMs < REGISTRY_REFRESH_MS) return;
    this.lastRegistryRefreshMs = now;
    const streams = (await this.redis.smembers(this.keys.usageStreamRegistry())).sort();
    for (const stream of streams) {
      if (this.groupsCreated.has(stream)) continue;
      try {
        // From id 0: entries appended before the group existed are still delivered.
        await this.redis.xgroup('CREATE', stream, USAGE_CONSUMER_GROUP, '0', 'MKSTREAM');
      } catch (error) {
        if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
      }
      this.groupsCreated.add(stream);
    }
    this.streams = streams;
  }

  private async read(block: boolean): Promise<StreamBatch> {
    if (this.streams.length === 0) return [];
    const blockArgs = block ? ['BLOCK', String(this.options.flushIntervalMs)] : [];
    const reply = (await this.redis.call(
      'XREADGROUP',
      'GROUP',
      USAGE_CONSUMER_GROUP,
      this.options.consumerName,
      'COUNT',
      String(this.options.batchMaxRows),
      ...blockArgs,
      'STREAMS',
      ...this.streams,
      ...this.streams.map(() => '>'),
    )) as StreamBatch | null;
    return (reply ?? []).filter(([, entries]) => entries.length > 0);
  }

  /** Takes over entries another consumer read but never acknowledged (it died). */
  private async claimStale(): Promise<void> {
    for (const stream of this.streams) {
      let cursor = '0-0';
      do {
        const reply = (await this.redis.call(
          'XAUTOCLAIM',
          stream,
          USAGE_CONSUMER_GROUP,
          this.options.consumerName,
          String(this.options.claimIdleMs),
          cursor,
          'COUNT',
          String(this.options.batchMaxRows),
        )) as [string, Array<StreamEntry | null>, string[]?];
        cursor = reply[0];
        const entries = reply[1].filter((entry): entry is StreamEntry => entry !== null);
        if (entries.length > 0) {
          this.logger.warn(
            { stream, count: entries.length },
            'usage writer: claimed stale entries',
          );
          await this.persist([[stream, entries]]);
        }
      } while (cursor !== '0-0' && this.running);
    }
  }

  /** Writes a batch to Postgres (retrying until it commits), then acks and deletes it. */
  private async persist(batch: StreamBatch): Promise<number> {
    const records: UsageRecord[] = [];
    const unreadable: Array<[string, string]> = [];
    for (const [stream, entries] of batch) {
      for (const [id, fields] of entries) {
        try {
          records.push(usageRecordFromFields(fields));
        } catch (error) {
          unreadable.push([stream, id]);
          this.logger.error(
            { err: error, stream, id },
            'usage writer: unreadable entry kept in stream',
          );
        }
      }
    }
    for (;;) {
      try {
        await this.sink.write(records);
        this.metrics.usageRowsWritten.inc(records.length);
        break;
      } catch (error) {
        this.metrics.usageWriteFailures.inc();
        this.logger.error(
          { err: error, rows: records.length },
          'usage writer: Postgres write failed',
        );
        if (!this.running) throw error; // leave the entries pending; another instance claims them
        await sleep(RETRY_BACKOFF_MS);
      }
    }
    const pipeline = this.redis.pipeline();
    for (const [stream, entries] of batch) {
      const ids = entries.map(([id]) => id);
      pipeline.xack(stream, USAGE_CONSUMER_GROUP, ...ids);
      // Unreadable entries are acknowledged (so they are not re-claimed forever) but kept.
      const done = ids.filter((id) => !unreadable.some(([s, u]) => s === stream && u === id));
      if (done.length > 0) pipeline.xdel(stream, ...done);
    }
    await pipeline.exec();
    return records.length;
  }
}
