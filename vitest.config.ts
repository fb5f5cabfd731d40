import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // after-hooks in reverse order: a file's own cleanup (stopping gateways) runs before the
    // shared context's (test/support/context.ts) deletes its keys and closes its handles
    sequence: { hooks: 'stack' },
  },
});
