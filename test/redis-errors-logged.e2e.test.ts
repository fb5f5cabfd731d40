// A gateway whose Redis goes away reports what ioredis tells it (each failed reconnection) in
// its structured log, at most once per 10 s, and never as raw text on stderr, which a log
// collector reading JSON lines would choke on: ioredis prints "[ioredis] Unhandled error
// event" for a client with no error listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { TEST_REDIS_URL } from './support/env.js';
import { startFreezableRelay, type FreezableRelay } from './support/freezable-relay.js';
import { startGatewayProcess } from './support/processes.js';
import { eventually } from './support/services.js';

const { env } = isolatedContext('redis-errors-logged');
let relay: FreezableRelay;

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  relay = await startFreezableRelay({ host: target.hostname, port: Number(target.port || 6379) });
});

afterAll(async () => {
  await relay?.close();
});

describe('a gateway whose Redis goes away', () => {
  it('logs the connection errors as JSON lines, a few, and prints nothing raw', async () => {
    const gateway = await startGatewayProcess({
      ...env,
      REDIS_URL: `redis://127.0.0.1:${relay.port}`,
    });
    try {
      await relay.close(); // connections reset, then refused
      await eventually(async () =>
        gateway.output().includes('"msg":"redis connection error"') ? true : undefined,
      );
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const lines = gateway
        .output()
        .split('\n')
        .filter((line) => line.trim() !== '');
      expect(lines.filter((line) => !line.startsWith('{'))).toEqual([]);
      const reported = lines
        .map((line) => JSON.parse(line) as { msg: string; code?: string })
        .filter((line) => line.msg === 'redis connection error');
      // One per client and 10 s (the gateway's and its usage writer thread's), not one per
      // reconnection attempt.
      expect(reported.length).toBeGreaterThanOrEqual(1);
      expect(reported.length).toBeLessThanOrEqual(2);
      // The first is the reset of the open connection or the refusal of the first reconnection,
      // whichever ioredis meets first on a loaded machine: either is named by its code.
      expect(['ECONNRESET', 'ECONNREFUSED']).toContain(reported[0]!.code);
    } finally {
      await gateway.stop('SIGKILL');
    }
  }, 60_000);
});
