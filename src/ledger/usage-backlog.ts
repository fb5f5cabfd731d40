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
  const streams = await redis.smembers(keys.usageStreamRegistry());
  return sum(await streamLengths(redis, streams));
}

/**
 * Entries left pending for a newer writer, over every org's stream. XPENDING's summary costs
 * one step per consumer the group ever had (every gateway start adds one), so it is asked only
 * of the streams that hold entries (most are empty: their entries are deleted once written).
 */
export async function usageRecordsAwaitingNewerWriter(
  redis: RedisClient,
  keys: RedisKeys,
): Promise<number> {
  const streams = await redis.smembers(keys.usageStreamRegistry());
  const lengths = await streamLengths(redis, streams);
  const holding = streams.filter((_, index) => lengths[index]! > 0);
  const replies = await perStream(redis, holding, (pipeline, stream) =>
    pipeline.xpending(stream, USAGE_CONSUMER_GROUP),
  );
  return sum(
    replies.map((reply) => {
      // [count, first id, last id, [[consumer, count], …] | null]; undefined: a failure
      const consumers = (reply as [number, unknown, unknown, Array<[string, string]> | null])?.[3];
      const awaiting = consumers?.find(([consumer]) => consumer === AWAITING_NEWER_WRITER);
      return awaiting ? Number(awaiting[1]) : 0;
    }),
  );
}

type Pipeline = ReturnType<RedisClient['pipeline']>;

/** Each stream's length, in order (0 for a stream whose read failed). */
async function streamLengths(redis: RedisClient, streams: readonly string[]): Promise<number[]> {
  const replies = await perStream(redis, streams, (pipeline, stream) => pipeline.xlen(stream));
  return replies.map((reply) => (reply === undefined ? 0 : Number(reply)));
}

/**
 * One command per stream, one pipeline per node of a cluster (an ioredis pipeline goes to one
 * node); the replies in the streams' order, undefined where the command failed.
 */
async function perStream(
  redis: RedisClient,
  streams: readonly string[],
  command: (pipeline: Pipeline, stream: string) => void,
): Promise<unknown[]> {
  const replies = new Map<string, unknown>();
  await Promise.all(
    pipelineGroups(redis, [...streams]).map(async (group) => {
      const pipeline = redis.pipeline();
      for (const stream of group) command(pipeline, stream);
      const results = (await pipeline.exec()) ?? [];
      group.forEach((stream, index) => {
        const [error, reply] = results[index] ?? [new Error('no reply'), undefined];
        if (!error) replies.set(stream, reply);
      });
    }),
  );
  return streams.map((stream) => replies.get(stream));
}

const sum = (values: readonly number[]): number =>
  values.reduce((total, value) => total + value, 0);
