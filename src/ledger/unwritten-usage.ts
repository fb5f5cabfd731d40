// Usage records an org has settled in Redis that Postgres does not have yet: its usage stream,
// less the entries whose rows the writer already committed (it deletes them right after, so
// a few can be in both for a moment). An account rebuilt from the ledger adds these, or it
// would forget what was spent while the writer (or Postgres) lagged behind.
import type { Redis } from 'ioredis';
import type { DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';

const PAGE = 1000;
/**
 * At most this many entries are read per org. Normally the stream holds a few hundred at
 * most; far more means Postgres has been down for a while, and a rebuild then counts only
 * the oldest this many (as it counted none before UnwrittenUsage existed).
 */
export const MAX_UNWRITTEN_ENTRIES = 20_000;

type StreamEntry = [id: string, fields: string[]];

export class UnwrittenUsage {
  /** One stream read per org at a time: the rebuilds that need it together share it. */
  private readonly reading = new Map<string, Promise<StreamEntry[]>>();

  constructor(
    private readonly redis: Redis,
    private readonly db: DbPool,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * The org's records not in the ledger yet; with `mentioning`, only those whose entry
   * mentions it (an id: the rest are not parsed). Call it before summing the ledger: a record
   * the writer commits in between is then found in the ledger and dropped here, never missed.
   */
  async forOrg(orgId: string, mentioning?: string): Promise<UsageRecord[]> {
    const records: UsageRecord[] = [];
    for (const [, fields] of await this.entries(orgId)) {
      if (mentioning !== undefined && !fields.some((field) => field.includes(mentioning))) {
        continue;
      }
      try {
        records.push(usageRecordFromFields(fields));
      } catch {
        // an unreadable entry is the writer's to report; it has no amounts to count
      }
    }
    if (records.length === 0) return records;
    const { rows } = await this.db.query<{ request_id: string }>(
      'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
      [records.map((record) => record.requestId)],
    );
    const written = new Set(rows.map((row) => row.request_id));
    return records.filter((record) => !written.has(record.requestId));
  }

  private entries(orgId: string): Promise<StreamEntry[]> {
    const running = this.reading.get(orgId);
    if (running) return running;
    const reading = this.readStream(orgId).finally(() => this.reading.delete(orgId));
    this.reading.set(orgId, reading);
    return reading;
  }

  private async readStream(orgId: string): Promise<StreamEntry[]> {
    const stream = this.keys.usageStream(orgId);
    const entries: StreamEntry[] = [];
    let start = '-';
    while (entries.length < MAX_UNWRITTEN_ENTRIES) {
      const page = (await this.redis.xrange(stream, start, '+', 'COUNT', PAGE)) as StreamEntry[];
      entries.push(...page);
      if (page.length < PAGE) break;
      start = `(${page.at(-1)![0]}`;
    }
    return entries;
  }
}

/** Sum of a nano amount over records. */
export function sumNano(
  records: readonly UsageRecord[],
  amount: (record: UsageRecord) => bigint,
): bigint {
  return records.reduce((total, record) => total + amount(record), 0n);
}
