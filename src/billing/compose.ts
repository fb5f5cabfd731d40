// The money layer, wired once: the wallet service, the account loader that rebuilds missing
// accounts from Postgres (with the usage still in Redis), and the Redis budget store on top.
// The gateway, the CLI, the bench and the tests all build it here, so they cannot drift.
import type { RedisClient } from '../redis/connect.js';
import type { DbPool } from '../db/pool.js';
import { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { Logger } from '../log.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import { AccountLoader } from './account-loader.js';
import { AccountRebuilder, type RebuildObserver } from './account-rebuild.js';
import { RedisBudgetStore } from './redis-budget-store.js';
import { WalletService } from './wallets.js';

export interface MoneyLayerParts {
  readonly db: DbPool;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  readonly scripts: RedisScripts;
  /** How long a hold lives unsettled (a crashed instance's holds lapse after it). */
  readonly reservationTtlMs: number;
  /** This gateway instance (named in its requests' in-flight drafts); random when omitted. */
  readonly instanceId?: string;
  /** Hears how each account rebuild ended (the gateway's metrics). */
  readonly observeRebuilds?: RebuildObserver;
  /** Hears how long each rebuild measurement took, in seconds (the gateway's metrics). */
  readonly observeRebuildMeasurements?: (seconds: number) => void;
  /** Where the budget store says what it released of reserves given up on. */
  readonly logger?: Logger;
}

export interface MoneyLayer {
  readonly unwritten: UnwrittenUsage;
  readonly wallets: WalletService;
  readonly loader: AccountLoader;
  readonly budget: RedisBudgetStore;
}

export function createMoneyLayer(parts: MoneyLayerParts): MoneyLayer {
  const { db, redis, keys, scripts } = parts;
  const unwritten = new UnwrittenUsage(redis, db, keys);
  const rebuilder = new AccountRebuilder({
    db,
    keys,
    scripts,
    unwritten,
    observe: parts.observeRebuilds,
    observeMeasurement: parts.observeRebuildMeasurements,
  });
  const wallets = new WalletService(db, redis, keys, scripts, unwritten, rebuilder);
  const loader = new AccountLoader(db, keys, scripts, wallets, unwritten, rebuilder);
  const budget = new RedisBudgetStore(
    redis,
    keys,
    scripts,
    loader,
    parts.reservationTtlMs,
    parts.instanceId,
    parts.logger,
  );
  return { unwritten, wallets, loader, budget };
}
