// REDIS_TIMEOUT_MS on ioredis: a Redis that never answers fails the command after the bound;
// a Redis that answered while the event loop was stalled does not (the reply is read first).
// ioredis' own timer, run in the same stalls, fails those healthy commands: the control.
import { Command, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSilentRedis, stallLoop, type SilentRedis } from '../../test/support/silent-redis.js';
import { isDependencyUnavailable } from '../errors.js';
import {
  COMMAND_TIMED_OUT,
  installStallTolerantTimeout,
  ioredisCommandTimer,
  isCommandTimeout,
} from './command-timeout.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Short, since every stall below busies the loop for a multiple of it, but with both paths of
 * the time-out taken (STALL_MS, src/stall-tolerant-timeout.ts): a stall of the bound + 100 ms
 * makes its timer 100 ms late (on time: one look), one of 3 bounds 400 ms late (past STALL_MS:
 * the bound again).
 */
const BOUND_MS = 200;

type SetTimeoutMethod = (ms: number) => void;
const commandPrototype = Command.prototype as unknown as { setTimeout: SetTimeoutMethod };
const ioredisTimeout: SetTimeoutMethod = ioredisCommandTimer;
installStallTolerantTimeout();
const stallTolerantTimeout = commandPrototype.setTimeout;

/** Where the stall begins: in an I/O callback (a Redis reply), a setImmediate, a timer. */
const CONTEXTS = ['io', 'immediate', 'timer'] as const;

/** PINGs, then stalls the loop for `stallMs` from `where`: the reply, or the error's message. */
function stalledPing(where: (typeof CONTEXTS)[number], stallMs: number): Promise<string> {
  return new Promise((resolve) => {
    const run = (): void => {
      const reply = redis.ping();
      stallLoop(stallMs);
      reply.then(resolve, (error: Error) => resolve(error.message));
    };
    if (where === 'io') void redis.get('command-timeout-test').then(run);
    else if (where === 'immediate') setImmediate(run);
    else setTimeout(run, 1);
  });
}

let silent: SilentRedis;
let redis: Redis;

beforeAll(async () => {
  silent = await startSilentRedis();
  redis = new Redis(REDIS_URL, { commandTimeout: BOUND_MS, maxRetriesPerRequest: 2 });
  await redis.ping();
});

afterAll(async () => {
  redis.disconnect();
  await silent.close();
});

/** A client of the silent Redis (no command of it is ever answered), its errors ignored. */
function silentClient(): Redis {
  const client = new Redis({
    port: silent.port,
    host: '127.0.0.1',
    commandTimeout: BOUND_MS,
    enableReadyCheck: false,
    maxRetriesPerRequest: 2,
  });
  client.on('error', () => undefined);
  return client;
}

/** A GET on `client`: the error it failed with (undefined if answered) and how long it took. */
async function timedFailure(client: Redis): Promise<{ error: unknown; waitedMs: number }> {
  const startedAt = Date.now();
  const error = await client.get('some-key').then(
    () => undefined,
    (failure: unknown) => failure,
  );
  return { error, waitedMs: Date.now() - startedAt };
}

describe('REDIS_TIMEOUT_MS (stall-tolerant command time-out)', () => {
  it('gives up on a command Redis never answers, after the bound, as a dependency unavailable', async () => {
    const hung = silentClient();
    try {
      const { error, waitedMs } = await timedFailure(hung);
      expect((error as Error).message).toBe(COMMAND_TIMED_OUT);
      expect(isCommandTimeout(error)).toBe(true);
      expect(isDependencyUnavailable(error)).toBe(true); // 503 gw_unavailable, not a 500
      expect(waitedMs).toBeGreaterThanOrEqual(BOUND_MS - 5);
      expect(waitedMs).toBeLessThan(BOUND_MS + 400);
    } finally {
      hung.disconnect();
    }
  });

  it('still gives up on a silent Redis when every turn of the loop is long, past six bounds', async () => {
    const hung = silentClient();
    const busy = setInterval(() => stallLoop(300), 0); // every turn takes 300 ms
    try {
      const { error, waitedMs } = await timedFailure(hung);
      expect(isCommandTimeout(error)).toBe(true);
      expect(waitedMs).toBeGreaterThanOrEqual(BOUND_MS * 6 - 5);
      expect(waitedMs).toBeLessThan(BOUND_MS * 6 + 1_500);
    } finally {
      clearInterval(busy);
      hung.disconnect();
    }
  });

  it('does not fail a command whose answer came while the loop was stalled past the bound', async () => {
    for (const where of CONTEXTS) {
      for (const stallMs of [BOUND_MS + 100, BOUND_MS * 3]) {
        expect({ where, stallMs, outcome: await stalledPing(where, stallMs) }).toEqual({
          where,
          stallMs,
          outcome: 'PONG',
        });
      }
    }
  });

  it('knows ioredis’ own timer in every copy of the module, whichever replaced it first', async () => {
    // A test process holds two copies (src/, and dist/ that in-process gateways run); a copy
    // loaded after the other replaced the timer must not take the replacement for ioredis' own.
    const dist = (await import(
      new URL('../../dist/src/redis/command-timeout.js', import.meta.url).href
    )) as typeof import('./command-timeout.js');
    dist.installStallTolerantTimeout();
    const later = (await import(
      new URL('../../dist/src/redis/command-timeout.js?loaded-later', import.meta.url).href
    )) as typeof import('./command-timeout.js');
    expect(later).not.toBe(dist);
    for (const copy of [dist, later]) {
      expect(copy.ioredisCommandTimer).toBe(ioredisCommandTimer);
    }
    expect(ioredisCommandTimer).not.toBe(commandPrototype.setTimeout);
  });

  it('control: ioredis’ own timer fails those healthy commands', async () => {
    commandPrototype.setTimeout = ioredisTimeout;
    try {
      // Its timer runs before the reply is read when the stall began in an I/O callback or a
      // setImmediate (libuv runs timers after the check phase, polls after the timers).
      for (const where of ['io', 'immediate'] as const) {
        for (const stallMs of [BOUND_MS + 100, BOUND_MS * 3]) {
          expect({ where, stallMs, outcome: await stalledPing(where, stallMs) }).toEqual({
            where,
            stallMs,
            outcome: COMMAND_TIMED_OUT,
          });
        }
      }
    } finally {
      commandPrototype.setTimeout = stallTolerantTimeout;
    }
  });
});
