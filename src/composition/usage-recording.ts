// Start-up, what gets every request's usage recorded, even a request this instance could not
// settle: the recovery of requests lost with an instance, the usage writer's thread (Redis →
// Postgres), and the settle spool (the settles made while Redis was away).
import { randomUUID } from 'node:crypto';
import { LostRequestRecovery } from '../billing/lost-requests.js';
import { SettleSpool } from '../billing/settle-spool.js';
import { waitAtMost, type Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { DbPool } from '../db/pool.js';
import { RecordedUsage } from '../ledger/recorded-usage.js';
import { UsageWriterThread } from '../ledger/usage-writer-thread.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics.js';
import type { ShutdownState } from './shutdown-state.js';
import type { RedisConnections } from './redis.js';
import type { Stores } from './stores.js';

/** The writer's final drain at shutdown; what it cannot write stays in Redis for the others. */
export const WRITER_STOP_TIMEOUT_MS = 15_000;

export interface UsageRecordingParts {
  readonly db: DbPool;
  readonly redis: RedisConnections;
  readonly stores: Pick<Stores, 'budget' | 'instanceId'>;
  readonly metrics: GatewayMetrics;
  /** Read by the recovery's closer: whether this instance left requests unsettled. */
  readonly shutdown: Pick<ShutdownState, 'unsettledAtExit'>;
}

/** All three started and closed by `closers`; the spool is what settle falls back on. */
export async function startUsageRecording(
  config: Config,
  logger: Logger,
  { db, redis: connections, stores, metrics, shutdown }: UsageRecordingParts,
  closers: Closers,
): Promise<SettleSpool> {
  const { client: redis, keys } = connections;
  // Requests this instance leaves unsettled (at the end of a drain, or at all, if killed)
  // are recorded by the others from their drafts once their holds lapse.
  const lostRequests = closers.add(
    'lost-request recovery',
    new LostRequestRecovery(redis, connections.scripts, keys, stores.budget, logger, {
      instanceId: stores.instanceId,
      deadAfterMs: config.INSTANCE_DEAD_AFTER_MS,
      recorded: metrics.lostRequestsRecorded,
    }),
    // Its stop leaves the list of live instances (a Redis command): with Redis hanging it is
    // waited for at most REDIS_TIMEOUT_MS, and a failure is no unclean stop: the others then
    // take this instance for dead and find nothing of it to record (decision 408).
    (recovery) =>
      waitAtMost(
        recovery
          .stop(shutdown.unsettledAtExit === 0)
          .catch((error: unknown) =>
            logger.warn({ err: error }, 'lost-request recovery: could not leave the instance list'),
          ),
        config.REDIS_TIMEOUT_MS,
      ),
  );
  await lostRequests.start();
  const writer = new UsageWriterThread(
    {
      redis: connections.target,
      databaseUrl: config.DATABASE_URL,
      writeTimeoutMs: config.USAGE_WRITE_TIMEOUT_MS,
      redisTimeoutMs: config.REDIS_TIMEOUT_MS,
      keyPrefix: config.REDIS_KEY_PREFIX,
      logLevel: config.LOG_LEVEL,
      options: {
        consumerName: `gw-${process.pid}-${randomUUID().slice(0, 8)}`,
        batchMaxRows: config.USAGE_BATCH_MAX_ROWS,
        flushIntervalMs: config.USAGE_FLUSH_INTERVAL_MS,
        claimIdleMs: config.USAGE_CLAIM_IDLE_MS,
      },
    },
    metrics,
    logger,
  );
  writer.start();
  closers.add('usage writer', writer, (thread) => thread.stop(WRITER_STOP_TIMEOUT_MS));

  const settleSpool = new SettleSpool(
    { dir: config.SPOOL_DIR, namespace: config.REDIS_KEY_PREFIX },
    {
      budget: stores.budget,
      recorded: new RecordedUsage(redis, db, keys),
      redisReady: () => redis.status === 'ready',
      logger,
      counters: metrics,
    },
  );
  await settleSpool.open();
  settleSpool.start();
  // Its stop waits for a replay under way (Redis commands, each bounded by REDIS_TIMEOUT_MS):
  // what a stop leaves unreplayed stays in the spool's files for the next replay.
  closers.add('settle spool', settleSpool, (spool) => spool.stop(), config.REDIS_TIMEOUT_MS);
  redis.on('ready', () => void settleSpool.replay());
  return settleSpool;
}
