// Reads and acknowledgements of the usage writers' consumer group over every org's stream. On a
// single Redis one XREADGROUP covers every stream and blocks until something comes. On a
// cluster a multi-key command must stay in one hash slot and the streams of different orgs
// are spread over the slots (each stream lives in its org's slot, beside the accounts that
// settle.lua moves with it): one non-blocking read per slot, sent together (the writer's
// client auto-pipelines them per node), in windows until a batch is full, starting one window
// further each time so every slot gets its turn; when nothing came, it waits as a block would.
import { pipelineGroups, slotGroups, type RedisClient } from '../redis/connect.js';
import { USAGE_CONSUMER_GROUP } from '../redis/keys.js';

export type StreamEntry = [id: string, fields: string[]];
export type StreamBatch = Array<[stream: string, entries: StreamEntry[]]>;

/**
 * The consumer that holds the entries a writer left for a newer version (entry-format.ts):
 * pending and unacknowledged, counted by the backlog gauge (usage-backlog.ts), and claimed
 * again like any other idle pending entry, by whichever writer comes first.
 */
export const AWAITING_NEWER_WRITER = 'awaiting-newer-writer';

/** Slots read together on a cluster (one command each, pipelined per node). */
const SLOTS_PER_WINDOW = 256;

type Pipeline = ReturnType<RedisClient['pipeline']>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class UsageStreamGroup {
  private nextWindow = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly consumerName: string,
  ) {}

  /**
   * New entries of `streams` for this consumer, about `count` at most; waits up to `blockMs`
   * (if given) for the first when there are none.
   */
  async read(streams: readonly string[], count: number, blockMs?: number): Promise<StreamBatch> {
    const groups = slotGroups(this.redis, streams);
    if (groups.length === 0) return [];
    if (groups.length === 1) return this.readSlot(groups[0]!, count, blockMs);
    const windows = Math.ceil(groups.length / SLOTS_PER_WINDOW);
    const batch: StreamBatch = [];
    let rows = 0;
    let failure: unknown;
    for (let turn = 0; turn < windows && rows < count; turn += 1) {
      const window = (this.nextWindow + turn) % windows;
      const slice = groups.slice(window * SLOTS_PER_WINDOW, (window + 1) * SLOTS_PER_WINDOW);
      const replies = await Promise.allSettled(slice.map((group) => this.readSlot(group, count)));
      for (const reply of replies) {
        // A shard that is away holds up its own streams only: they wait there for it.
        if (reply.status === 'rejected') {
          failure ??= reply.reason;
          continue;
        }
        for (const [stream, entries] of reply.value) {
          batch.push([stream, entries]);
          rows += entries.length;
        }
      }
    }
    this.nextWindow = (this.nextWindow + 1) % windows;
    if (rows === 0 && failure !== undefined) throw failure; // nothing to write: report it
    if (rows === 0 && blockMs !== undefined) await sleep(blockMs);
    return batch;
  }

  /**
   * Acknowledges and deletes entries whose rows are committed (one pipeline per node). One that
   * fails (its node is away) leaves its entries pending: they are claimed and written again,
   * which the ledger ignores (ON CONFLICT DO NOTHING).
   */
  async acknowledge(batch: StreamBatch): Promise<void> {
    await this.perNode(batch, (pipeline, stream, ids) => {
      pipeline.xack(stream, USAGE_CONSUMER_GROUP, ...ids);
      pipeline.xdel(stream, ...ids);
    });
  }

  /**
   * Hands entries to AWAITING_NEWER_WRITER, unacknowledged (one pipeline per node; JUSTID: no
   * delivery counted). Their idle time starts again, so the next claim of them is at least
   * `claimIdleMs` away. One that fails stays this consumer's, and is claimed all the same.
   */
  async park(batch: StreamBatch): Promise<void> {
    await this.perNode(batch, (pipeline, stream, ids) => {
      pipeline.call(
        'XCLAIM',
        stream,
        USAGE_CONSUMER_GROUP,
        AWAITING_NEWER_WRITER,
        '0',
        ...ids,
        'JUSTID',
      );
    });
  }

  /**
   * Queues `command` for each stream of the batch with its entries' ids, in one pipeline per
   * node, sent together; a pipeline that fails (its node is away) fails alone, unreported.
   */
  private async perNode(
    batch: StreamBatch,
    command: (pipeline: Pipeline, stream: string, ids: string[]) => void,
  ): Promise<void> {
    const idsOf = new Map(batch.map(([stream, entries]) => [stream, entries.map(([id]) => id)]));
    await Promise.allSettled(
      pipelineGroups(this.redis, [...idsOf.keys()]).map(async (streams) => {
        const pipeline = this.redis.pipeline();
        for (const stream of streams) command(pipeline, stream, idsOf.get(stream)!);
        await pipeline.exec();
      }),
    );
  }

  /**
   * One XREADGROUP over streams of one slot (every stream, on a single Redis). A node that
   * came back empty has lost the group: it is made again (from the start of the stream) and
   * the read tried once more.
   */
  private async readSlot(
    streams: readonly string[],
    count: number,
    blockMs?: number,
  ): Promise<StreamBatch> {
    try {
      return await this.readSlotOnce(streams, count, blockMs);
    } catch (error) {
      if (!String((error as Error).message).includes('NOGROUP')) throw error;
      await Promise.all(streams.map((stream) => createGroup(this.redis, stream)));
      return this.readSlotOnce(streams, count, blockMs);
    }
  }

  private async readSlotOnce(
    streams: readonly string[],
    count: number,
    blockMs?: number,
  ): Promise<StreamBatch> {
    const blockArgs = blockMs === undefined ? [] : ['BLOCK', String(blockMs)];
    const reply = (await this.redis.call(
      'XREADGROUP',
      'GROUP',
      USAGE_CONSUMER_GROUP,
      this.consumerName,
      'COUNT',
      String(count),
      ...blockArgs,
      'STREAMS',
      ...streams,
      ...streams.map(() => '>'),
    )) as StreamBatch | null;
    return (reply ?? []).filter(([, entries]) => entries.length > 0);
  }
}

/** The writers' group on a stream, from its first entry (made with the stream if need be). */
export async function createGroup(redis: RedisClient, stream: string): Promise<void> {
  try {
    await redis.xgroup('CREATE', stream, USAGE_CONSUMER_GROUP, '0', 'MKSTREAM');
  } catch (error) {
    if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
  }
}
