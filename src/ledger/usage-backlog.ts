// How many usage records are settled in Redis and not yet written to Postgres: the length of
// every org's usage stream (the writer deletes entries once their rows are committed). A
// value that keeps rising means Postgres is slow or down; the records wait in Redis meanwhile.
import { pipelineGroups, type RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';

export async function pendingUsageRecords(redis: RedisClient, keys: RedisKeys): Promise<number> {
  const streams = await redis.smembers(keys.usageStreamRegistry());
  // One pipeline per node of a cluster (an ioredis pipeline goes to one node).
  const counts = await Promise.all(
    pipelineGroups(redis, streams).map(async (group) => {
      const pipeline = redis.pipeline();
      for (const stream of group) pipeline.xlen(stream);
      const lengths = (await pipeline.exec()) ?? [];
      return lengths.reduce((total, [error, length]) => total + (error ? 0 : Number(length)), 0);
    }),
  );
  return counts.reduce((total, count) => total + count, 0);
}
