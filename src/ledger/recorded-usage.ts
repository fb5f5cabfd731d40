// Which of an org's requests already left a usage record: in its usage stream (settled, not
// yet written), in usage_records, or in usage_dead_letters. A spooled settle is replayed only
// when its request is in none of them: settle.lua's idempotency marker lives minutes, a
// spool can wait longer, and a settle whose reply was lost may have run after all.
import type { RedisClient } from '../redis/connect.js';
import type { DbPool } from '../db/pool.js';
import type { RedisKeys } from '../redis/keys.js';
import { isUuid, readUsageStream } from './unwritten-usage.js';
import { usageRecordFromFields } from './usage-record.js';

export class RecordedUsage {
  constructor(
    private readonly redis: RedisClient,
    private readonly db: DbPool,
    private readonly keys: RedisKeys,
  ) {}

  /** The ids among `requestIds` (all of one org) that already have a record. */
  async among(orgId: string, requestIds: readonly string[]): Promise<Set<string>> {
    const wanted = new Set(requestIds);
    const found = new Set<string>();
    // The stream first: the writer commits a row before it deletes the entry, so a record
    // that moves meanwhile is found in Postgres below.
    for (const [, fields] of await readUsageStream(this.redis, this.keys.usageStream(orgId))) {
      try {
        const { requestId } = usageRecordFromFields(fields);
        if (wanted.has(requestId)) found.add(requestId);
      } catch {
        // not a record: the writer dead-letters it
      }
    }
    const { rows } = await this.db.query<{ request_id: string }>(
      `SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])
       UNION SELECT request_id FROM usage_dead_letters WHERE request_id = ANY($2::text[])`,
      [requestIds.filter(isUuid), requestIds],
    );
    for (const row of rows) found.add(row.request_id);
    return found;
  }
}
