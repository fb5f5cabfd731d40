// The usage writer as the gateway's writer thread runs it (Postgres sink, dead letters), for the
// tests that move what settles into the ledger themselves: silent, small batches, a 20 ms
// flush interval unless a test asks otherwise. A test may give its own logger (to read what the
// writer logs), sink (to watch its writes) and the entry names the writer knows (to play a
// writer of an older version).
import type { DbPool } from '../../src/db/pool.js';
import { PostgresUsageSink } from '../../src/ledger/postgres-usage-sink.js';
import { UsageDeadLetters } from '../../src/ledger/usage-dead-letters.js';
import { UsageStreamWriter } from '../../src/ledger/usage-writer.js';
import { createLogger, type Logger } from '../../src/log.js';
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
    readonly logger?: Logger;
    readonly sink?: PostgresUsageSink;
    readonly knownEntryNames?: ReadonlySet<string>;
  } = {},
): UsageStreamWriter {
  return new UsageStreamWriter(
    redis,
    keys,
    options.sink ?? new PostgresUsageSink(db),
    new UsageDeadLetters(db),
    options.logger ?? createLogger('silent'),
    options.metrics ?? new GatewayMetrics(false),
    {
      consumerName,
      batchMaxRows: 100,
      flushIntervalMs: options.flushIntervalMs ?? 20,
      claimIdleMs: options.claimIdleMs ?? 30_000,
      knownEntryNames: options.knownEntryNames,
    },
  );
}
