// A stop while Redis hangs (a stopped host, a partition: connections open, no answer) still
// ends within longestStopMs (decision 408), the sum the manifests' kill deadlines are checked
// against (test/deploy-manifests.test.ts): the usage writer's final drain gives up after its
// bound, the lost-request recovery's leaving the instance list (a Redis command) is waited for
// at most REDIS_TIMEOUT_MS and its failure is no unclean stop, and each Redis connection's QUIT
// is waited for at most a second. The sum used to leave the Redis waits out, and the stop
// failed (exit 1) on the recovery's command timing out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longestStopMs } from '../src/composition/drain.js';
import { loadConfig } from '../src/config.js';
import { isolatedContext } from './support/context.js';
import { TEST_REDIS_URL } from './support/env.js';
import { startFreezableRelay, type FreezableRelay } from './support/freezable-relay.js';
import { startGateway } from './support/processes.js';

const { env } = isolatedContext('stop-redis-hang');
let relay: FreezableRelay;

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  relay = await startFreezableRelay({ host: target.hostname, port: Number(target.port || 6379) });
});

afterAll(async () => {
  await relay?.close();
});

describe('a stop while Redis hangs', () => {
  it('ends cleanly within longestStopMs, which counts its Redis waits', async () => {
    const settings = {
      ...env,
      REDIS_URL: `redis://127.0.0.1:${relay.port}`,
      REDIS_TIMEOUT_MS: '8000',
      SHUTDOWN_GRACE_MS: '500',
    };
    const gateway = await startGateway(settings);
    relay.freeze();
    const started = Date.now();
    await gateway.stop(); // rejects when a closer failed (an unclean stop: exit 1)
    const tookMs = Date.now() - started;
    const config = loadConfig({ ...process.env, ...settings });
    expect(tookMs).toBeLessThan(longestStopMs(config));
    expect(gateway.output()).not.toContain('closing failed');
  }, 60_000);
});
