// A subscriber cut off without a reset (its connection silent for good, nothing refused) is
// noticed by its own PINGs and connects again: it emits 'ready' (the caches are dropped) and
// hears what is published afterwards. Without the PINGs nothing it waits for would ever fail,
// and it would miss every invalidation from then on.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../../test/support/env.js';
import { startFreezableRelay } from '../../test/support/freezable-relay.js';
import { eventually, testRedis } from '../../test/support/services.js';
import { connectSubscriber, keepSubscriberAlive } from './subscriber.js';

const BOUND_MS = 300;
const publisher = testRedis();

afterAll(async () => {
  await publisher.quit();
});

describe('keepSubscriberAlive', () => {
  it('reconnects a subscriber whose connection went silent, which then hears what is published', async () => {
    const target = new URL(TEST_REDIS_URL);
    const relay = await startFreezableRelay({
      host: target.hostname,
      port: Number(target.port || 6379),
    });
    target.port = String(relay.port);
    const subscriber = connectSubscriber({ kind: 'single', url: target.href }, () => []);
    const channel = `gw-test-subscriber-${randomBytes(4).toString('hex')}`;
    let readies = 0;
    const heard: string[] = [];
    subscriber.on('ready', () => (readies += 1));
    subscriber.on('message', (_channel, message) => heard.push(message));
    const replaced: number[] = [];
    const watch = keepSubscriberAlive(subscriber, BOUND_MS, (_connection, silentForMs) =>
      replaced.push(silentForMs),
    );
    try {
      await subscriber.subscribe(channel);
      await eventually(async () =>
        (await publisher.publish(channel, 'before')) > 0 ? true : undefined,
      );
      await eventually(async () => (heard.includes('before') ? true : undefined));
      const readiesBefore = readies;

      relay.strandOpen();
      // Published while stranded: lost, as any message while disconnected; the 'ready' that
      // follows is what tells the caches to forget.
      await eventually(async () => (readies > readiesBefore ? true : undefined), 5_000);
      expect(replaced.length).toBe(1);
      expect(replaced[0]).toBeGreaterThanOrEqual(2 * BOUND_MS);
      await eventually(async () =>
        (await publisher.publish(channel, 'after')) > 0 ? true : undefined,
      );
      await eventually(async () => (heard.includes('after') ? true : undefined));
    } finally {
      watch.stop();
      subscriber.disconnect();
      await relay.close();
    }
  });
});
