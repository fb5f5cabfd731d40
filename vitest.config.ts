import { defineConfig } from 'vitest/config';

/**
 * The files that run on a Redis Cluster as well as on a single Redis (the `cluster` project):
 * the money, BYOK and durability tests, the pub/sub invalidations, and the cluster's own
 * tests. Every other file runs on a single Redis only.
 */
export const clusterFiles = [
  'test/cluster/redis-cluster.test.ts',
  'test/cluster/shard-restart.e2e.test.ts',

  'test/reserve-settle.race.test.ts',
  'test/money-limits.test.ts',
  'test/rate-limits.test.ts',
  'test/allowance.race.test.ts',
  'test/account-rebuild.race.test.ts',
  'test/wallet-adjust-rebuild.race.test.ts',
  'test/credits-load.race.test.ts',
  'test/cap-change.race.test.ts',
  'test/allowance.e2e.test.ts',
  'test/charging.e2e.test.ts',
  'test/byok.e2e.test.ts',
  'test/credentials.test.ts',
  'test/settle-spool.test.ts',
  'test/usage-writer.test.ts',
  'test/usage-dead-letters.test.ts',
  'test/usage-writer.rolling-deploy.test.ts',
  'test/shutdown-crashes.e2e.test.ts',
  'test/lost-requests.e2e.test.ts',
  'test/auth-cache.race.test.ts',
  // The money layer against its reference model, under random concurrent operations.
  'test/money-model.race.test.ts',
  'test/period-turn.test.ts',
  // Holds kept while a request runs (decision 498) and grants retried after a failed Redis
  // step (499).
  'test/hold-renewal.race.test.ts',
  'test/long-request-holds.e2e.test.ts',
  'test/credit-grant-retry.test.ts',
  // Wallet top-ups retried after a failed Redis step (decision 521).
  'test/wallet-topup-retry.test.ts',
  // A dashboard top-up's retry with its key finishes it (542).
  'test/wallet-topup-idempotent-retry.test.ts',
  // Balance sets recorded first and applied once, as top-ups are (544).
  'test/wallet-set-retry.test.ts',
  // gw reconcile tells a top-up landing mid-measurement from drift (563).
  'test/reconcile-topup.race.test.ts',
  // Sessions listed per user: every Redis command of a cut on one key (decision 360).
  'test/dashboard-passwords.e2e.test.ts',
];

/**
 * The cluster to run them on (`npm run test:cluster` starts a local one with .ci/redis-cluster
 * and names it). Without it, only the `single` project exists: `npx vitest run <file>` runs
 * on the single Redis as always.
 */
const clusterNodes = process.env.TEST_REDIS_CLUSTER_NODES ?? '';

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page or another instance shows next: its default of 1 s is
    // less than a loaded machine (CI: 2 cores at load ~10) can take to render a fetched list or
    // carry an invalidation, as long as a browser test's own waits (10 s, test/support/browser.ts)
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    maxWorkers: 2,
    // Each worker runs its files one after another in one process, importing src/ and the
    // drivers once instead of once per file: a fifth off the suite's wall time (decision 329).
    // Files share no module state they change (no vi.mock, no process.env writes).
    isolate: false,
    // after-hooks in reverse order: a file's own cleanup (stopping gateways) runs before the
    // shared context's (test/support/context.ts) deletes its keys and closes its handles
    sequence: { hooks: 'stack' },
    projects: [
      {
        extends: true,
        test: {
          name: 'single',
          include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
          exclude: ['test/cluster/**'],
          env: { TEST_REDIS_CLUSTER_NODES: '' },
        },
      },
      ...(clusterNodes === ''
        ? []
        : [
            {
              extends: true as const,
              test: {
                name: 'cluster',
                include: clusterFiles,
                env: { TEST_REDIS_CLUSTER_NODES: clusterNodes },
              },
            },
          ]),
    ],
  },
});
