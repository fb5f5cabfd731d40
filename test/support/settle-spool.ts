// The settle spool for the tests that spool settles: a fresh directory of its own (a gateway's
// SPOOL_DIR, or an in-process spool's), the spool files in it, and a spool built as the gateway
// builds it (Redis always taken as ready, silent) for the tests that replay it themselves.
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BudgetStore } from '../../src/billing/budget-store.js';
import { SettleSpool } from '../../src/billing/settle-spool.js';
import type { DbPool } from '../../src/db/pool.js';
import { RecordedUsage } from '../../src/ledger/recorded-usage.js';
import { createLogger } from '../../src/log.js';
import { GatewayMetrics } from '../../src/metrics.js';
import type { RedisClient } from '../../src/redis/connect.js';
import type { RedisKeys } from '../../src/redis/keys.js';

/** A new, empty directory for a spool, named after the test that uses it. */
export function spoolDirectory(label: string): string {
  return mkdtempSync(path.join(tmpdir(), `gw-${label}-spool-`));
}

/** The paths of the spool files in `dir` (an instance's entries not yet retired). */
export function spoolFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.spool'))
    .map((name) => path.join(dir, name));
}

/**
 * A spool in a new directory, not opened. `namespace` is the Redis key prefix `keys` were made
 * with, as the gateway names it; `metrics` where a test reads the spool's counters.
 */
export function testSettleSpool(
  services: {
    readonly db: DbPool;
    readonly redis: RedisClient;
    readonly keys: RedisKeys;
    readonly budget: BudgetStore;
  },
  namespace: string,
  metrics = new GatewayMetrics(false),
): { spool: SettleSpool; dir: string } {
  const dir = spoolDirectory(namespace);
  const spool = new SettleSpool(
    { dir, namespace },
    {
      budget: services.budget,
      recorded: new RecordedUsage(services.redis, services.db, services.keys),
      redisReady: () => true,
      logger: createLogger('silent'),
      counters: metrics,
    },
  );
  return { spool, dir };
}
