// Entry point of the usage writer thread (started by src/ledger/usage-writer-thread.ts): the
// thread's composition root. It builds its own connections and runs UsageStreamWriter, whose
// batches also write the webhook events of spend (src/usage-events/), until the gateway asks it
// to stop.
import { parentPort, workerData } from 'node:worker_threads';
import { createDbPool } from './db/pool.js';
import { createLogger } from './log.js';
import { connectRedis, warnOfErrors } from './redis/connect.js';
import { createRedisKeys } from './redis/keys.js';
import { replaceSilentConnections, warnOfReplacement } from './redis/silent-connections.js';
import { PostgresUsageSink } from './ledger/postgres-usage-sink.js';
import { UsageDeadLetters } from './ledger/usage-dead-letters.js';
import { UsageStreamWriter } from './ledger/usage-writer.js';
import {
  STOP_WRITER,
  type UsageWriterThreadMessage,
  type UsageWriterThreadSettings,
} from './ledger/usage-writer-thread.js';
import { UsageEvents } from './usage-events/usage-events.js';

const settings = workerData as UsageWriterThreadSettings;
const port = parentPort!;
const post = (message: UsageWriterThreadMessage): void => port.postMessage(message);

const logger = createLogger(settings.logLevel, 'gw-usage-writer');
// Auto-pipelined: on a cluster the writer's reads and acks are one command per hash slot,
// which ioredis then sends to each node together. (Only a cluster's reads run in parallel; on a
// single Redis there is one blocking read at a time, which must not queue others behind it.)
// On a cluster its commands give up after two reconnection attempts: a read waiting for a
// node that is away would hold up the other shards' streams (failed reads are tried again).
const redis = connectRedis(settings.redis, {
  maxRetriesPerRequest: settings.redis.kind === 'cluster' ? 2 : null,
  autoPipelining: settings.redis.kind === 'cluster',
  onError: warnOfErrors(logger, 'redis connection error'),
});
// No bound on its commands (a blocking read waits up to USAGE_FLUSH_INTERVAL_MS by design, and
// a read or an ack given up on would only be sent again), but a connection cut off without a
// reset is replaced rather than waited on until TCP gives up (decision 318): what it read and
// never acknowledged is claimed again after USAGE_CLAIM_IDLE_MS.
const silenceWatch =
  settings.redisTimeoutMs === undefined
    ? undefined
    : replaceSilentConnections(
        redis,
        settings.options.flushIntervalMs + settings.redisTimeoutMs,
        warnOfReplacement(logger, 'redis connection silent with commands waiting: reconnecting'),
      );
const db = createDbPool(settings.databaseUrl, 2, settings.writeTimeoutMs, {
  applicationName: 'gw-usage-writer',
});
const writer = new UsageStreamWriter(
  redis,
  createRedisKeys(settings.keyPrefix),
  new PostgresUsageSink(db, { writer: new UsageEvents(), logger }),
  new UsageDeadLetters(db),
  logger,
  {
    usageRowsWritten: { inc: (count) => post({ kind: 'rows_written', count }) },
    usageWriteFailures: { inc: () => post({ kind: 'write_failed' }) },
    usageDeadLetters: { inc: (count) => post({ kind: 'dead_lettered', count }) },
  },
  settings.options,
);
writer.start();

port.on('message', (message: unknown) => {
  if (message !== STOP_WRITER) return;
  void (async () => {
    await writer.stop();
    silenceWatch?.stop();
    await Promise.allSettled([redis.quit(), db.end()]);
    port.close(); // nothing left to run: the thread exits
  })();
});
