// Start-up, Redis: the commands' client and the invalidation subscriber, each with its watch
// for a connection gone silent, the key names, and the scripts loaded.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import {
  connectRedis,
  knownNodes,
  quitWithin,
  warnOfErrors,
  type RedisClient,
} from '../redis/connect.js';
import { waitForDependency } from './dependency-wait.js';
import { createRedisKeys, type RedisKeys } from '../redis/keys.js';
import { defineScripts, preloadScripts, type RedisScripts } from '../redis/scripts.js';
import { replaceSilentConnections, warnOfReplacement } from '../redis/silent-connections.js';
import { connectSubscriber, keepSubscriberAlive, type Subscriber } from '../redis/subscriber.js';
import { describeTarget, redisTarget, type RedisTarget } from '../redis/target.js';

/**
 * How long a stop waits for each connection's QUIT (the commands' and the subscriber's, one
 * after the other) before it drops the connection: nothing of the gateway's waits on them
 * then, and a Redis that hangs must not hold the stop (decision 408).
 */
export const REDIS_QUIT_WAIT_MS = 1_000;

export interface RedisConnections {
  /** Where Redis is (the usage writer's thread connects there on its own). */
  readonly target: RedisTarget;
  /** Every command of the gateway, each bounded by REDIS_TIMEOUT_MS. */
  readonly client: RedisClient;
  /** Hears the cache invalidations. */
  readonly subscriber: Subscriber;
  readonly keys: RedisKeys;
  readonly scripts: RedisScripts;
}

/** Both connections open and watched, closed by `closers`; the scripts loaded on every master. */
export async function openRedis(
  config: Config,
  logger: Logger,
  closers: Closers,
  stop?: AbortSignal,
): Promise<RedisConnections> {
  // No auto-pipelining: the script calls of the hot path coalesce their writes themselves
  // (src/redis/scripts.ts), more cheaply; other commands are rare. Every command waits at most
  // REDIS_TIMEOUT_MS for its answer: a Redis that hangs answers requests 503, not never
  // (decision 318). The subscriber and the usage writer's thread wait as long as it takes.
  const target = redisTarget(config);
  logger.info(describeTarget(target), 'redis');
  const client = closers.add(
    'redis',
    connectRedis(target, {
      maxRetriesPerRequest: 2,
      commandTimeoutMs: config.REDIS_TIMEOUT_MS,
      onError: warnOfErrors(logger, 'redis connection error'),
    }),
    (connection) => quitWithin(connection, REDIS_QUIT_WAIT_MS),
  );
  // A connection silent for good (cut off without a reset) is replaced, not waited on until TCP
  // gives up (src/redis/silent-connections.ts).
  closers.add(
    'redis silence watch',
    replaceSilentConnections(
      client,
      config.REDIS_TIMEOUT_MS,
      warnOfReplacement(logger, 'redis connection silent with commands waiting: reconnecting'),
    ),
    (watch) => watch.stop(),
  );
  const seedNodes = target.kind === 'cluster' ? target.nodes : [];
  const subscriber = closers.add(
    'redis subscriber',
    // Named, so an operator (or a test) can find this instance's subscriber in CLIENT LIST.
    connectSubscriber(
      target,
      () => knownNodes(client, seedNodes),
      `${config.REDIS_KEY_PREFIX}:invalidations`,
    ),
    // No bound on its commands (none waits on it), but a shutdown does not wait on a Redis that
    // hangs for its QUIT.
    (connection) => quitWithin(connection, REDIS_QUIT_WAIT_MS),
  );
  closers.add(
    'redis subscriber watch',
    keepSubscriberAlive(
      subscriber,
      config.REDIS_TIMEOUT_MS,
      warnOfReplacement(
        logger,
        'redis subscriber silent: reconnecting (caches are dropped once it listens again)',
      ),
    ),
    (watch) => watch.stop(),
  );
  // Redis down or hanging at boot: a PING tried again with backoff, each bounded by
  // REDIS_TIMEOUT_MS (the client's command time-out), for six of them in all; then the boot
  // fails (decision 426).
  await waitForDependency(
    logger,
    {
      service: target.kind === 'single' ? 'Redis (REDIS_URL)' : 'Redis (REDIS_CLUSTER_NODES)',
      attemptMs: config.REDIS_TIMEOUT_MS,
      stop,
    },
    () => client.ping(),
  );
  const keys = createRedisKeys(config.REDIS_KEY_PREFIX);
  const scripts = defineScripts(client);
  await preloadScripts(client);
  return { target, client, subscriber, keys, scripts };
}
