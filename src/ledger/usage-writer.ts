// The batch writer: drains every org's usage stream (Redis consumer group) into Postgres in
// batches, acknowledges only after commit, and claims entries left pending by instances that
// died. A row Postgres refuses goes to the dead-letter table instead of blocking the rest.
// An entry of a newer version (a name this version does not know) is neither written nor
// dead-lettered nor acknowledged: it is left pending for a newer writer (entry-format.ts).
// A slow Postgres slows this loop, never the request path.
import { randomInt } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { isCluster, pipelineGroups, type RedisClient } from '../redis/connect.js';
import type { Logger } from '../log.js';
import { USAGE_CONSUMER_GROUP, type RedisKeys } from '../redis/keys.js';
import type { PostgresUsageSink } from './postgres-usage-sink.js';
import { KNOWN_ENTRY_NAMES, unknownEntryNames } from './entry-format.js';
import { isRowRefusal, type DeadLetter, type UsageDeadLetters } from './usage-dead-letters.js';
import { isNoticeEntry, usageNoticeFromFields, type UsageNotice } from './usage-notices.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';
import {
  createGroup,
  UsageStreamGroup,
  type StreamBatch,
  type StreamEntry,
} from './usage-stream-group.js';

/** What the writer counts (GatewayMetrics' counters, or a relay from the writer thread). */
export interface UsageWriterCounters {
  readonly usageRowsWritten: { inc(count: number): void };
  readonly usageWriteFailures: { inc(): void };
  readonly usageDeadLetters: { inc(count: number): void };
}

export interface UsageWriterOptions {
  readonly consumerName: string;
  readonly batchMaxRows: number;
  readonly flushIntervalMs: number;
  readonly claimIdleMs: number;
  /**
   * The entry names this writer knows (default: this version's, KNOWN_ENTRY_NAMES); tests
   * give fewer to play a writer of an older version.
   */
  readonly knownEntryNames?: ReadonlySet<string>;
}

const REGISTRY_REFRESH_MS = 1000;
const RETRY_BACKOFF_MS = 500;

/** Waits `ms`, or less when `signal` aborts (a stopping writer does not wait out a pause). */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  delay(ms, undefined, { signal }).catch(() => undefined);

export class UsageStreamWriter {
  private running = false;
  /** Aborted by stop(): ends the loop's pauses at once. */
  private stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private streams: string[] = [];
  private readonly groupsCreated = new Set<string>();
  /** Every stream this writer has read: kept when the registry or a group is lost. */
  private readonly known = new Set<string>();
  private lastRegistryRefreshMs = 0;
  private nextClaimAtMs = 0;
  private readonly group: UsageStreamGroup;
  /** The drain that runs after the one running, which later calls join (drainOnce). */
  private nextDrain: Promise<number> | undefined;
  private drainsDone: Promise<unknown> = Promise.resolve();

  constructor(
    /** A dedicated connection: blocking reads must not stall the request path's client. */
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly sink: PostgresUsageSink,
    private readonly deadLetters: UsageDeadLetters,
    private readonly logger: Logger,
    private readonly metrics: UsageWriterCounters,
    private readonly options: UsageWriterOptions,
  ) {
    this.group = new UsageStreamGroup(redis, options.consumerName);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  /** Stops after the batch in hand is written, then drains what is left once. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await this.loop;
    await this.drainOnce().catch((error: unknown) =>
      this.logger.error({ err: error }, 'usage writer: final drain failed; entries stay in Redis'),
    );
  }

  /**
   * Reads and writes until the streams have nothing new (used at shutdown and in tests);
   * returns the rows written. One drain at a time: a call while one runs waits for it, then
   * runs one more (which reads everything appended before the call); calls while that one
   * waits join it and get its count.
   */
  drainOnce(): Promise<number> {
    if (this.nextDrain) return this.nextDrain;
    const next = this.drainsDone.then(() => {
      this.nextDrain = undefined;
      return this.drain();
    });
    this.nextDrain = next;
    this.drainsDone = next.catch(() => undefined);
    return next;
  }

  private async drain(): Promise<number> {
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
          await sleep(this.options.flushIntervalMs, this.stopping.signal);
          continue;
        }
        if (Date.now() >= this.nextClaimAtMs) {
          this.nextClaimAtMs = Date.now() + claimRoundDelayMs(this.options.claimIdleMs);
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
          await sleep(this.options.flushIntervalMs - elapsedMs, this.stopping.signal);
        }
      } catch (error) {
        // A Redis that restarted empty has lost the consumer groups: create them again.
        if (String((error as Error).message).includes('NOGROUP')) this.groupsCreated.clear();
        this.logger.error({ err: error }, 'usage writer: iteration failed; retrying');
        await sleep(RETRY_BACKOFF_MS, this.stopping.signal);
      }
    }
  }

  /**
   * Reads the registry and makes the group on streams new to this writer. On a cluster, one
   * shard that is away (the registry's, or a stream's) holds up nothing else: the last list
   * is kept, and a stream whose group could not be made is read once it can be. A stream this
   * writer has read stays on its list even when the registry no longer names it (the registry's
   * shard restarted empty while the stream's did not, or both did and the records settled since
   * wait in the new stream): it is put back in the registry, so other writers and the pending
   * gauge see it again without waiting for the gateways to announce their orgs anew.
   */
  private async refreshStreams(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastRegistryRefreshMs < REGISTRY_REFRESH_MS) return;
    this.lastRegistryRefreshMs = now;
    let registered: string[];
    try {
      registered = await this.redis.smembers(this.keys.usageStreamRegistry());
    } catch (error) {
      if (this.streams.length === 0) throw error;
      this.logger.warn({ err: error }, 'usage writer: stream registry unreadable; using the last');
      return;
    }
    const named = new Set(registered);
    const forgotten = [...this.known].filter((stream) => !named.has(stream));
    if (forgotten.length > 0) await this.reRegister(forgotten);
    const streams: string[] = [];
    for (const stream of [...new Set([...registered, ...forgotten])].sort()) {
      if (!this.groupsCreated.has(stream)) {
        try {
          await createGroup(this.redis, stream);
        } catch (error) {
          this.logger.warn({ err: error, stream }, 'usage writer: group not made yet');
          continue;
        }
        this.groupsCreated.add(stream);
        this.known.add(stream);
      }
      streams.push(stream);
    }
    this.streams = streams;
  }

  /** Puts streams the registry lost back in it (best effort: the next refresh tries again). */
  private async reRegister(streams: readonly string[]): Promise<void> {
    this.logger.warn({ count: streams.length }, 'usage writer: registry lost streams; re-adding');
    await this.redis
      .sadd(this.keys.usageStreamRegistry(), ...streams)
      .catch((error: unknown) =>
        this.logger.warn({ err: error }, 'usage writer: registry not repaired yet'),
      );
  }

  private async read(block: boolean): Promise<StreamBatch> {
    if (this.streams.length === 0) return [];
    const blockMs = block ? this.options.flushIntervalMs : undefined;
    return this.group.read(this.streams, this.options.batchMaxRows, blockMs);
  }

  /**
   * Takes over entries another consumer read but never acknowledged (it died). Node by node on
   * a cluster: a node that fails is left until the next round, the others go on.
   */
  private async claimStale(): Promise<void> {
    for (const streams of pipelineGroups(this.redis, this.streams)) {
      try {
        for (const stream of streams) await this.claimStaleOf(stream);
      } catch (error) {
        if (!isCluster(this.redis)) throw error;
        this.logger.warn({ err: error }, 'usage writer: claims on one node failed; next round');
      }
    }
  }

  private async claimStaleOf(stream: string): Promise<void> {
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
        this.logger.warn({ stream, count: entries.length }, 'usage writer: claimed stale entries');
        await this.persist([[stream, entries]]);
      }
    } while (cursor !== '0-0' && this.running);
  }

  /**
   * Writes a batch to Postgres, then acks and deletes its entries. A batch Postgres refuses
   * because of what a row holds is split until the refused rows are alone; those (and entries
   * that are not records) go to the dead-letter table with the reason. Any other failure is
   * retried as it is. An entry is acked only once its row is in usage_records or in the
   * dead-letter table. An entry naming something this version does not know is left out of
   * all of it, pending for a newer writer (parked).
   */
  private async persist(batch: StreamBatch): Promise<number> {
    const readable: DecodedEntry[] = [];
    const unreadable: DeadLetter[] = [];
    const { owned, newer, unknownNames } = byVersion(
      batch,
      this.options.knownEntryNames ?? KNOWN_ENTRY_NAMES,
    );
    if (newer.length > 0) await this.park(newer, unknownNames);
    for (const [stream, entries] of owned) {
      for (const [id, fields] of entries) {
        try {
          readable.push(
            isNoticeEntry(fields)
              ? { stream, id, fields, notice: usageNoticeFromFields(fields) }
              : { stream, id, fields, record: usageRecordFromFields(fields) },
          );
        } catch (error) {
          unreadable.push(deadLetter({ stream, id, fields }, error));
        }
      }
    }
    let refused: DeadLetter[];
    for (;;) {
      try {
        refused = await this.writeOrSplit(readable);
        await this.deadLetters.write([...unreadable, ...refused]);
        break;
      } catch (error) {
        this.metrics.usageWriteFailures.inc();
        this.logger.error(
          { err: error, rows: readable.length },
          'usage writer: Postgres write failed',
        );
        if (!this.running) throw error; // leave the entries pending; another instance claims them
        await sleep(RETRY_BACKOFF_MS);
      }
    }
    const written = readable.filter((entry) => entry.record).length - refused.length;
    this.metrics.usageRowsWritten.inc(written);
    const deadLettered = unreadable.length + refused.length;
    if (deadLettered > 0) {
      this.metrics.usageDeadLetters.inc(deadLettered);
      for (const letter of [...unreadable, ...refused]) {
        this.logger.error(
          { stream: letter.stream, id: letter.entryId, reason: letter.reason },
          'usage writer: entry moved to usage_dead_letters',
        );
      }
    }
    await this.group.acknowledge(owned);
    return written;
  }

  /**
   * Leaves entries of a newer version pending for a writer that knows them. Parked, they are
   * claimed again only once idle for claimIdleMs (by any writer: one of this version parks
   * them again, once per claimIdleMs at most, never in a loop); the backlog gauge counts them.
   */
  private async park(newer: StreamBatch, unknownNames: readonly string[]): Promise<void> {
    const count = newer.reduce((total, [, entries]) => total + entries.length, 0);
    this.logger.warn(
      { count, unknownNames: unknownNames.slice(0, 20) },
      'usage writer: records wait for a newer writer (they name fields this version does not know); left pending, not written',
    );
    await this.group.park(newer);
  }

  /** Writes the entries' rows; returns those Postgres refuses, each alone, with the reason. */
  private async writeOrSplit(entries: readonly DecodedEntry[]): Promise<DeadLetter[]> {
    if (entries.length === 0) return [];
    try {
      await this.sink.write(
        entries.flatMap((entry) => (entry.record ? [entry.record] : [])),
        entries.flatMap((entry) => (entry.notice ? [entry.notice] : [])),
      );
      return [];
    } catch (error) {
      if (!isRowRefusal(error)) throw error;
      if (entries.length === 1) return [deadLetter(entries[0]!, error)];
      const middle = Math.ceil(entries.length / 2);
      return [
        ...(await this.writeOrSplit(entries.slice(0, middle))),
        ...(await this.writeOrSplit(entries.slice(middle))),
      ];
    }
  }
}

/**
 * The time to this writer's next claim round: half the claim idle time on average, drawn from a
 * quarter to three quarters of it. Jittered: an entry a writer parks (or claims) becomes idle
 * again in step with that writer's own rounds, so with fixed rounds the same writer would claim
 * it first every time, and a newer writer beside an older one that parks a record would never
 * get it while the older one runs (review of decision 333).
 */
function claimRoundDelayMs(claimIdleMs: number): number {
  return claimIdleMs * (0.25 + randomInt(500_001) / 1_000_000);
}

/**
 * Splits a batch into the entries this writer can write whole (owned) and those naming
 * something it does not know (newer), with those names.
 */
function byVersion(
  batch: StreamBatch,
  known: ReadonlySet<string>,
): { owned: StreamBatch; newer: StreamBatch; unknownNames: string[] } {
  const owned: StreamBatch = [];
  const newer: StreamBatch = [];
  const unknownNames = new Set<string>();
  for (const [stream, entries] of batch) {
    const ownedEntries: StreamEntry[] = [];
    const newerEntries: StreamEntry[] = [];
    for (const entry of entries) {
      const unknown = unknownEntryNames(entry[1], known);
      for (const name of unknown) unknownNames.add(name);
      (unknown.length > 0 ? newerEntries : ownedEntries).push(entry);
    }
    if (ownedEntries.length > 0) owned.push([stream, ownedEntries]);
    if (newerEntries.length > 0) newer.push([stream, newerEntries]);
  }
  return { owned, newer, unknownNames: [...unknownNames].sort() };
}

/** A stream entry read: a usage record, or a notice for the webhooks (usage-notices.ts). */
interface DecodedEntry {
  readonly stream: string;
  readonly id: string;
  readonly fields: string[];
  readonly record?: UsageRecord;
  readonly notice?: UsageNotice;
}

function deadLetter(
  entry: {
    stream: string;
    id: string;
    fields: string[];
    record?: UsageRecord;
    notice?: UsageNotice;
  },
  error: unknown,
): DeadLetter {
  return {
    stream: entry.stream,
    entryId: entry.id,
    fields: entry.fields,
    reason: error instanceof Error ? error.message : String(error),
    requestId: entry.record?.requestId ?? entry.notice?.requestId ?? null,
    orgId: entry.record?.orgId ?? entry.notice?.orgId ?? null,
  };
}
