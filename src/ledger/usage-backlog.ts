// How many usage records are settled in Redis and not yet written to Postgres: the length of
// every org's usage stream (the writer deletes entries once their rows are committed). A
// value that keeps rising means Postgres is slow or down; the records wait in Redis meanwhile.
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../redis/keys.js';

export async function pendingUsageRecords(redis: Redis, keys: RedisKeys): Promise<number> {
  const streams = await redis.smembers(keys.usageStreamRegistry());
  if (streams.length === 0) return 0;
  const pipeline = redis.pipeline();
  for (const stream of streams) pipeline.xlen(stream);
  const lengths = (await pipeline.exec()) ?? [];
  return lengths.reduce((total, [error, length]) => total + (error ? 0 : Number(length)), 0);
}
