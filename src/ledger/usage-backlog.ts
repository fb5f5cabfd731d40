// How many usage records are settled in Redis and not yet written to Postgres: the length of
// every org's usage stream (the writer deletes entries once their rows are committed). A
// value that keeps rising means Postgres is slow or down; the records wait in Redis meanwhile.
// Of those, how many a writer left for a writer of a newer version (entry-format.ts): during a
// rolling deploy, until the older writers are gone; at any other time, a writer of an older
// version still runs somewhere (or the version was rolled back).
import { pipelineGroups, type RedisClient } from '../redis/connect.js';
import { USAGE_CONSUMER_GROUP, type RedisKeys } from '../redis/keys.js';
import { AWAITING_NEWER_WRITER } from './usage-stream-group.js';

export async function pendingUsageRecords(redis: RedisClient, keys: RedisKeys): Promise<number> {
  return sumOverStreams(redis, keys, (pipeline, stream) => pipeline.xlen(stream), Number);
}

/** Entries left pending for a newer writer, over every org's stream. */
export async function usageRecordsAwaitingNewerWriter(
  redis: RedisClient,
  keys: RedisKeys,
): Promise<number> {
  return sumOverStreams(
    redis,
    keys,
    (pipeline, stream) => pipeline.xpending(stream, USAGE_CONSUMER_GROUP),
    (reply) => {
      // [count, first id, last id, [[consumer, count], …] | null]
      const consumers = (reply as [number, unknown, unknown, Array<[string, string]> | null])[3];
      const awaiting = consumers?.find(([consumer]) => consumer === AWAITING_NEWER_WRITER);
      return awaiting ? Number(awaiting[1]) : 0;
    },
  );
}

type Pipeline = ReturnType<RedisClient['pipeline']>;

/** One command per registered stream, one pipeline per node of a cluster; failures count 0. */
async function sumOverStreams(
  redis: RedisClient,
  keys: RedisKeys,
  command: (pipeline: Pipeline, stream: string) => void,
  count: (reply: unknown) => number,
): Promise<number> {
  const streams = await redis.smembers(keys.usageStreamRegistry());
  // An ioredis pipeline goes to one node.
  const counts = await Promise.all(
    pipelineGroups(redis, streams).map(async (group) => {
      const pipeline = redis.pipeline();
      for (const stream of group) command(pipeline, stream);
      const replies = (await pipeline.exec()) ?? [];
      return replies.reduce((total, [error, reply]) => total + (error ? 0 : count(reply)), 0);
    }),
  );
  return counts.reduce((total, value) => total + value, 0);
}
