// A connection whose oldest command has waited twice the bound of responsive loop time is
// replaced; a stalled loop's time does not count (the answer may be there, unread).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSilentRedis, stallLoop, type SilentRedis } from '../../test/support/silent-redis.js';
import { replaceSilentConnections } from './silent-connections.js';

const BOUND_MS = 200;

let silent: SilentRedis;

beforeAll(async () => {
  silent = await startSilentRedis();
});

afterAll(() => silent.close());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('replaceSilentConnections', () => {
  it('replaces a connection that answers nothing after twice the bound, not counting a stall', async () => {
    const client = new Redis({
      port: silent.port,
      host: '127.0.0.1',
      enableReadyCheck: false,
      disableClientInfo: true, // nothing to wait for before `ready`
      maxRetriesPerRequest: null,
    });
    client.on('error', () => undefined);
    const replaced: number[] = [];
    const watch = replaceSilentConnections(client, BOUND_MS, (_connection, silentForMs) =>
      replaced.push(silentForMs),
    );
    try {
      await new Promise((resolve) => client.once('ready', resolve));
      const connects = silent.sockets.size;
      void client.get('never-answered').catch(() => undefined);
      await sleep(BOUND_MS); // the watch sees the command waiting
      stallLoop(BOUND_MS * 5); // a stall five times the bound: not silence
      await sleep(BOUND_MS / 2);
      expect(replaced).toEqual([]);
      // Then silence while the loop is free: replaced, and connected again.
      await sleep(BOUND_MS * 3);
      expect(replaced).toHaveLength(1);
      expect(replaced[0]).toBeGreaterThanOrEqual(2 * BOUND_MS);
      expect(replaced[0]).toBeLessThan(5 * BOUND_MS);
      await sleep(BOUND_MS);
      expect(silent.sockets.size).toBeGreaterThan(connects);
    } finally {
      watch.stop();
      client.disconnect();
    }
  });

  it('leaves alone a connection that answers, however long the loop stalls', async () => {
    const client = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
    const replaced: number[] = [];
    const watch = replaceSilentConnections(client, BOUND_MS, (_connection, silentForMs) =>
      replaced.push(silentForMs),
    );
    try {
      await client.ping();
      for (let round = 0; round < 5; round += 1) {
        const answered = client.ping();
        stallLoop(BOUND_MS * 3);
        await answered;
        await sleep(BOUND_MS);
      }
      expect(replaced).toEqual([]);
    } finally {
      watch.stop();
      client.disconnect();
    }
  });
});
