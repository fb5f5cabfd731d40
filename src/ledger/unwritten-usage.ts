// Usage records an org has settled in Redis that Postgres does not have yet: its usage stream,
// less the entries whose rows the writer already committed (it deletes them right after, so
// a few can be in both for a moment). An account rebuilt from the ledger adds these, or it
// would forget what was spent while the writer (or Postgres) lagged behind.
import type { Redis } from 'ioredis';
import type { DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import { usageRecordFromFields, type UsageRecord } from './usage-record.js';

const PAGE = 1000;

export class UnwrittenUsage {
  constructor(
    private readonly redis: Redis,
    private readonly db: DbPool,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * The org's records not in the ledger yet. Read before the ledger is summed: a record the
   * writer commits in between is then found in the ledger and dropped here, never missed.
   */
  async forOrg(orgId: string): Promise<UsageRecord[]> {
    const records = await this.inStream(orgId);
    if (records.length === 0) return records;
    const { rows } = await this.db.query<{ request_id: string }>(
      'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
      [records.map((record) => record.requestId)],
    );
    const written = new Set(rows.map((row) => row.request_id));
    return records.filter((record) => !written.has(record.requestId));
  }

  private async inStream(orgId: string): Promise<UsageRecord[]> {
    const stream = this.keys.usageStream(orgId);
    const records: UsageRecord[] = [];
    let start = '-';
    for (;;) {
      const entries = await this.redis.xrange(stream, start, '+', 'COUNT', PAGE);
      for (const [, fields] of entries) {
        try {
          records.push(usageRecordFromFields(fields));
        } catch {
          // an unreadable entry is the writer's to report; it has no amounts to count
        }
      }
      if (entries.length < PAGE) return records;
      start = `(${entries.at(-1)![0]}`;
    }
  }
}

/** Sum of a nano amount over records. */
export function sumNano(
  records: readonly UsageRecord[],
  amount: (record: UsageRecord) => bigint,
): bigint {
  return records.reduce((total, record) => total + amount(record), 0n);
}
