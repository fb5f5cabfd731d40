// Usage records an org has settled in Redis that Postgres does not have yet: its usage stream,
// and its dead letters not replayed yet (settled and charged, but refused by usage_records),
// less the records whose rows the writer already committed (it deletes them right after, so
// a few can be in both for a moment). An account rebuilt from the ledger adds these, or it
// would forget what was spent while the writer (or Postgres) lagged behind.
import type { RedisClient } from '../redis/connect.js';
import type { DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';

const PAGE = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
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
    private readonly redis: RedisClient,
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
    const entries = [
      ...(await this.entries(orgId)).map(([, fields]) => fields),
      ...(await this.deadLetters(orgId)),
    ];
    const seen = new Set<string>();
    for (const fields of entries) {
      if (mentioning !== undefined && !fields.some((field) => field.includes(mentioning))) {
        continue;
      }
      try {
        const record = usageRecordFromFields(fields);
        if (seen.has(record.requestId)) continue;
        seen.add(record.requestId);
        records.push(record);
      } catch {
        // an unreadable entry is the writer's to report; it has no amounts to count
      }
    }
    if (records.length === 0) return records;
    const { rows } = await this.db.query<{ request_id: string }>(
      'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
      // An id that is not a uuid cannot be in the ledger (and would fail the cast).
      [records.map((record) => record.requestId).filter(isUuid)],
    );
    const written = new Set(rows.map((row) => row.request_id));
    return records.filter((record) => !written.has(record.requestId));
  }

  /** The fields of the org's dead-lettered entries not replayed yet. */
  private async deadLetters(orgId: string): Promise<string[][]> {
    const { rows } = await this.db.query<{ entry: string }>(
      'SELECT entry FROM usage_dead_letters WHERE org_id = $1 AND replayed_at IS NULL',
      [orgId],
    );
    return rows.map((row) => JSON.parse(row.entry) as string[]);
  }

  private entries(orgId: string): Promise<StreamEntry[]> {
    const running = this.reading.get(orgId);
    if (running) return running;
    const reading = readUsageStream(
      this.redis,
      this.keys.usageStream(orgId),
      MAX_UNWRITTEN_ENTRIES,
    ).finally(() => this.reading.delete(orgId));
    this.reading.set(orgId, reading);
    return reading;
  }
}

/** A usage stream's entries, oldest first, page by page, up to `max` (about). */
export async function readUsageStream(
  redis: RedisClient,
  stream: string,
  max = Infinity,
): Promise<StreamEntry[]> {
  const entries: StreamEntry[] = [];
  let start = '-';
  while (entries.length < max) {
    const page = (await redis.xrange(stream, start, '+', 'COUNT', PAGE)) as StreamEntry[];
    entries.push(...page);
    if (page.length < PAGE) break;
    start = `(${page.at(-1)![0]}`;
  }
  return entries;
}

/** True for a request id usage_records can hold (its column is a uuid). */
export const isUuid = (id: string): boolean => UUID.test(id);

/** Sum of a nano amount over records. */
export function sumNano(
  records: readonly UsageRecord[],
  amount: (record: UsageRecord) => bigint,
): bigint {
  return records.reduce((total, record) => total + amount(record), 0n);
}
