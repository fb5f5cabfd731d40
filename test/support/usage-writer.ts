// The usage writer as the gateway's writer thread runs it (Postgres sink, dead letters), for the
// tests that move what settles into the ledger themselves: silent, small batches, a 20 ms
// flush interval unless a test asks otherwise.
import type { DbPool } from '../../src/db/pool.js';
import { PostgresUsageSink } from '../../src/ledger/postgres-usage-sink.js';
import { UsageDeadLetters } from '../../src/ledger/usage-dead-letters.js';
import { UsageStreamWriter } from '../../src/ledger/usage-writer.js';
import { createLogger } from '../../src/log.js';
import { GatewayMetrics } from '../../src/metrics.js';
import type { RedisClient } from '../../src/redis/connect.js';
import type { RedisKeys } from '../../src/redis/keys.js';

export function testUsageWriter(
  redis: RedisClient,
  keys: RedisKeys,
  db: DbPool,
  consumerName: string,
  options: {
    readonly claimIdleMs?: number;
    readonly flushIntervalMs?: number;
    /** Where the writer counts rows, failures and dead letters (a test may read them). */
    readonly metrics?: GatewayMetrics;
  } = {},
): UsageStreamWriter {
  return new UsageStreamWriter(
    redis,
    keys,
    new PostgresUsageSink(db),
    new UsageDeadLetters(db),
    createLogger('silent'),
    options.metrics ?? new GatewayMetrics(false),
    {
      consumerName,
      batchMaxRows: 100,
      flushIntervalMs: options.flushIntervalMs ?? 20,
      claimIdleMs: options.claimIdleMs ?? 30_000,
    },
  );
}
