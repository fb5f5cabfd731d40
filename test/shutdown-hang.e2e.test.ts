// A stop while Redis or Postgres hangs (a stopped host, a partition: connections open, no
// answer) still ends within longestStopMs (decisions 408, 434), the sum the manifests' kill
// deadlines are checked against (test/deploy-manifests.test.ts). Redis: the usage writer's
// final drain gives up after its bound, the lost-request recovery's leaving the instance list
// (a Redis command) is waited for at most REDIS_TIMEOUT_MS and its failure is no unclean stop,
// and each Redis connection's QUIT is waited for at most a second (the sum used to leave the
// Redis waits out, and the stop failed, exit 1, on the recovery's command timing out).
// Postgres: the writer's drain gives up after its bound, and each pool's end (its goodbye
// unanswered) is left behind after its bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longestStopMs } from '../src/composition/drain.js';
import { loadConfig } from '../src/config.js';
import { isolatedContext } from './support/context.js';
import { TEST_REDIS_URL } from './support/env.js';
import {
  relayedTestDatabase,
  startFreezableRelay,
  type FreezableRelay,
} from './support/freezable-relay.js';
import { startMailCatcher } from './support/mail-catcher.js';
import { startGateway } from './support/processes.js';

const { env } = isolatedContext('stop-hang');
let relay: FreezableRelay;
let postgresRelay: FreezableRelay;
let postgresUrl: string;

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  relay = await startFreezableRelay({ host: target.hostname, port: Number(target.port || 6379) });
  ({ relay: postgresRelay, url: postgresUrl } = await relayedTestDatabase(env.DATABASE_URL));
});

afterAll(async () => {
  await relay?.close();
  await postgresRelay?.close();
});

describe('a stop while Redis hangs', () => {
  it('ends cleanly within longestStopMs, which counts its Redis waits', async () => {
    const settings = {
      ...env,
      REDIS_URL: `redis://127.0.0.1:${relay.port}`,
      // the recovery's command times out (2 s), as any would: a stop that failed on it would
      // reject below, whatever the time-out
      REDIS_TIMEOUT_MS: '2000',
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

describe('a stop while Postgres hangs', () => {
  it('ends cleanly within longestStopMs, leaving behind a pool whose query hangs', async () => {
    const settings = {
      ...env,
      DATABASE_URL: postgresUrl,
      DATABASE_TIMEOUT_MS: '30000',
      DEPENDENCY_CHECK_TIMEOUT_MS: '300',
      SHUTDOWN_GRACE_MS: '500',
    };
    const gateway = await startGateway(settings);
    postgresRelay.freeze();
    // A readiness check answers `degraded` within its bound, but its query on the probe's own
    // pool waits for Postgres until DATABASE_TIMEOUT_MS: the pool cannot end before it does.
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(await ready.json()).toMatchObject({ status: 'degraded' });
    const started = Date.now();
    await gateway.stop(); // rejects when a closer failed (an unclean stop: exit 1)
    const tookMs = Date.now() - started;
    const config = loadConfig({ ...process.env, ...settings });
    expect(tookMs).toBeLessThan(longestStopMs(config));
    expect(tookMs).toBeLessThan(Number(settings.DATABASE_TIMEOUT_MS));
    expect(gateway.output()).toContain('closing did not end in time: left behind');
    expect(gateway.output()).toContain('"resource":"postgres probe"');
    expect(gateway.output()).not.toContain('closing failed');
  }, 90_000);
});

describe('a stop while Postgres hangs, where gw sends e-mail', () => {
  it("ends within longestStopMs, leaving behind the e-mail sender's pool whose claim hangs", async () => {
    const mail = await startMailCatcher();
    const settings = {
      ...env,
      DATABASE_URL: postgresUrl,
      // past the sum: a stop that waited for the claim's read time-out would outlast it
      DATABASE_TIMEOUT_MS: '60000',
      SHUTDOWN_GRACE_MS: '500',
      SMTP_URL: mail.url,
      EMAIL_FROM: 'no-reply@gw.example.test',
      PUBLIC_ORIGIN: 'https://gw.example.test',
    };
    try {
      postgresRelay.thaw();
      const gateway = await startGateway(settings);
      postgresRelay.freeze();
      // the sender looks for mail due every second: its next claim waits on the frozen Postgres
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const started = Date.now();
      await gateway.stop();
      const tookMs = Date.now() - started;
      const config = loadConfig({ ...process.env, ...settings });
      expect(tookMs).toBeLessThan(longestStopMs(config));
      expect(tookMs).toBeLessThan(Number(settings.DATABASE_TIMEOUT_MS));
      expect(gateway.output()).toContain('"resource":"e-mail pool"');
      expect(gateway.output()).not.toContain('closing failed');
    } finally {
      postgresRelay.thaw();
      await mail.close();
    }
  }, 120_000);
});
