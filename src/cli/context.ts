// The CLI's composition root: the same config and adapters as the gateway, for one command.
import { usePasswordScryptN } from '../accounts/passwords.js';
import type { Actor } from '../audit/audit.js';
import { ApiKeyStore } from '../auth/api-key-store.js';
import { invalidationPublisher, type InvalidationPublisher } from '../cache/invalidation.js';
import { createMoneyLayer } from '../billing/compose.js';
import type { WalletService } from '../billing/wallets.js';
import { loadConfig, type Config } from '../config.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { createDbPool, type DbPool } from '../db/pool.js';
import { LiveBalanceReader } from '../product-users/live-balance.js';
import { ProductUserManagement } from '../product-users/management.js';
import { ProductUserProfiles } from '../product-users/profile.js';
import { connectRedis, quitRedis, type RedisClient } from '../redis/connect.js';
import { redisTarget } from '../redis/target.js';
import { createRedisKeys, type RedisKeys } from '../redis/keys.js';
import { cliIo } from './io.js';
import {
  DependencyUnavailableError,
  reachable as reachableOnce,
} from '../composition/dependency-wait.js';
import { UsageError } from './output.js';
import { defineScripts, type RedisScripts } from '../redis/scripts.js';

/** Who the audit log names for a change made with the CLI (it has no dashboard user). */
export const CLI_ACTOR: Actor = { userId: 'cli' };

export interface CliContext {
  readonly config: Config;
  readonly db: DbPool;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly scripts: RedisScripts;
  readonly wallets: WalletService;
  readonly apiKeys: ApiKeyStore;
  readonly productUsers: ProductUserManagement;
  /** The product-user objects the dashboard API answers (a profile, a user's credits). */
  readonly profiles: ProductUserProfiles;
  /** Publishes cache invalidations to the gateways (the CLI has no caches of its own). */
  readonly invalidations: InvalidationPublisher;
  close(): Promise<void>;
}

/** Refuses (gw_not_found) an organization id that names none. */
export async function requireOrganization(context: CliContext, orgId: string): Promise<void> {
  const { rows } = await context.db.query('SELECT 1 FROM organizations WHERE id = $1', [orgId]);
  if (rows.length === 0) throw new UsageError(`no organization ${orgId}`, 'gw_not_found');
}

/** The product user of an app (created if missing), for commands that name one. */
export async function ensureProductUser(
  context: CliContext,
  appId: string,
  externalUserId: string,
): Promise<{ id: string; org_id: string }> {
  const { rows } = await context.db.query<{ org_id: string }>(
    'SELECT org_id FROM apps WHERE id = $1',
    [appId],
  );
  if (!rows[0]) throw new UsageError(`no app ${appId}`, 'gw_invalid_app_id');
  const { user } = await context.productUsers.upsert({
    orgId: rows[0].org_id,
    appId,
    externalUserId,
  });
  return user;
}

/**
 * A pool on DATABASE_URL (the database made if missing) for a command: opening a connection
 * waits at most DATABASE_TIMEOUT_MS (gw_unavailable, exit 2); its statements stay unbounded.
 */
export async function openCliDatabase(
  config: Config,
  size: number,
  applicationName: string,
): Promise<DbPool> {
  const connectMs = config.DATABASE_TIMEOUT_MS;
  // The driver's own bound, a little later, ends the attempt (ours answers first, clearly).
  const driverConnectMs = connectMs + 1_000;
  await reachable(
    ensureDatabase(config.DATABASE_URL, driverConnectMs),
    connectMs,
    'Postgres (DATABASE_URL)',
  );
  return createDbPool(config.DATABASE_URL, size, undefined, {
    applicationName,
    connectTimeoutMs: driverConnectMs,
  });
}

/**
 * `work`, or a refusal naming `service` once it failed or `ms` passed: the CLI answers
 * `gw_unavailable` (exit 2) rather than wait as long as it takes on a dependency that is down
 * or hangs (decision 407). One attempt: the boot's retries are for a process an orchestrator
 * started (decision 426).
 */
export async function reachable<T>(work: Promise<T>, ms: number, service: string): Promise<T> {
  try {
    return await reachableOnce(work, ms, service);
  } catch (error) {
    if (error instanceof DependencyUnavailableError) {
      throw new UsageError(error.message, 'gw_unavailable');
    }
    throw error;
  }
}

export async function openCliContext(): Promise<CliContext> {
  const config = loadConfig(cliIo().env);
  usePasswordScryptN(config.PASSWORD_SCRYPT_N);
  // Redis's first answer waits at most REDIS_TIMEOUT_MS, a Postgres connection at most
  // DATABASE_TIMEOUT_MS; the commands' own statements stay unbounded (long scans, migrations).
  const db = await openCliDatabase(config, 2, 'gw-cli');
  const redis = connectRedis(redisTarget(config), { maxRetriesPerRequest: 2 });
  try {
    await reachable(
      db.connect().then((client) => client.release()),
      config.DATABASE_TIMEOUT_MS,
      'Postgres (DATABASE_URL)',
    );
    await reachable(redis.ping(), config.REDIS_TIMEOUT_MS, 'Redis (REDIS_URL)');
  } catch (error) {
    redis.disconnect();
    await db.end();
    throw error;
  }
  await migrate(db);
  const keys = createRedisKeys(config.REDIS_KEY_PREFIX);
  const scripts = defineScripts(redis);
  const invalidations = invalidationPublisher(redis, keys.invalidationChannel());
  const money = createMoneyLayer({
    db,
    redis,
    keys,
    scripts,
    reservationTtlMs: config.RESERVATION_TTL_MS,
  });
  return {
    config,
    db,
    redis,
    keys,
    scripts,
    wallets: money.wallets,
    apiKeys: new ApiKeyStore(db, redis, keys, 0),
    productUsers: new ProductUserManagement(db, redis, keys, scripts, invalidations),
    profiles: new ProductUserProfiles(db, new LiveBalanceReader(redis, keys, money.loader)),
    invalidations,
    async close() {
      await quitRedis(redis);
      await db.end();
    },
  };
}
