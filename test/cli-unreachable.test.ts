// The CLI with Postgres or Redis away (decision 407): it waits at most DATABASE_TIMEOUT_MS for a
// Postgres connection and REDIS_TIMEOUT_MS for Redis's first answer, then answers in gw's error
// shape with `gw_unavailable` and exit 2, whether the service hangs (a relay in front of it
// that forwards nothing: connections open, no answer) or refuses. It used to wait as long as
// it took on one that hangs, and to report one that refuses as an unexpected error (exit 1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { TEST_REDIS_URL } from './support/env.js';
import {
  relayedTestDatabase,
  startFreezableRelay,
  type FreezableRelay,
} from './support/freezable-relay.js';
import { runCli } from './support/processes.js';
import { freePort } from './support/services.js';

const { env } = isolatedContext('cli-unreachable');
const relays: FreezableRelay[] = [];

afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.close()));
});

let hungDatabaseUrl: string;
let hungRedisUrl: string;

beforeAll(async () => {
  const database = await relayedTestDatabase();
  database.relay.freeze();
  hungDatabaseUrl = database.url;
  const redisTarget = new URL(TEST_REDIS_URL);
  const redis = await startFreezableRelay({
    host: redisTarget.hostname,
    port: Number(redisTarget.port || 6379),
  });
  redis.freeze();
  hungRedisUrl = `redis://127.0.0.1:${redis.port}`;
  relays.push(database.relay, redis);
});

/** Runs `gw reconcile` with `settings`; its exit code, error and how long it took. */
async function reconcileWith(settings: Record<string, string>) {
  const started = Date.now();
  const result = await runCli(['reconcile'], { ...env, ...settings });
  return {
    code: result.code,
    error: result.stderr === '' ? undefined : (JSON.parse(result.stderr) as { error: unknown }),
    tookMs: Date.now() - started,
  };
}

describe('the CLI with a dependency away', () => {
  it('gives up on a Postgres that hangs after DATABASE_TIMEOUT_MS', async () => {
    const ran = await reconcileWith({ DATABASE_URL: hungDatabaseUrl, DATABASE_TIMEOUT_MS: '1000' });
    expect(ran.code).toBe(2);
    expect(ran.error).toEqual({
      error: {
        code: 'gw_unavailable',
        message: 'Postgres (DATABASE_URL) did not answer within 1000 ms',
      },
    });
    expect(ran.tookMs).toBeLessThan(5_000);
  });

  it('gives up on a Redis that hangs after REDIS_TIMEOUT_MS', async () => {
    const ran = await reconcileWith({ REDIS_URL: hungRedisUrl, REDIS_TIMEOUT_MS: '1000' });
    expect(ran.code).toBe(2);
    expect(ran.error).toEqual({
      error: { code: 'gw_unavailable', message: 'Redis (REDIS_URL) did not answer within 1000 ms' },
    });
    expect(ran.tookMs).toBeLessThan(5_000);
  });

  it('bounds gw migrate the same way (decision 426: it used to wait as long as it took)', async () => {
    const ran = await runCli(['migrate'], {
      ...env,
      DATABASE_URL: hungDatabaseUrl,
      DATABASE_TIMEOUT_MS: '1000',
    });
    expect(ran.code).toBe(2);
    expect(ran.stdout).toBe('');
    expect(JSON.parse(ran.stderr)).toEqual({
      error: {
        code: 'gw_unavailable',
        message: 'Postgres (DATABASE_URL) did not answer within 1000 ms',
      },
    });
  });

  it('says a Postgres that refuses is unreachable, with the address it tried', async () => {
    const port = await freePort();
    const ran = await reconcileWith({
      DATABASE_URL: `postgres://postgres:a-secret-password@127.0.0.1:${port}/gw`,
    });
    expect(ran.code).toBe(2);
    expect(ran.error).toEqual({
      error: {
        code: 'gw_unavailable',
        message: `Postgres (DATABASE_URL) is unreachable: connect ECONNREFUSED 127.0.0.1:${port}`,
      },
    });
    expect(JSON.stringify(ran.error)).not.toContain('a-secret-password');
  });
});
