// Large inputs are tokenized in the worker pool: the event loop stays free meanwhile.
// (The margin is wide on purpose: the machine is shared and other test files run alongside,
// while counting this input inline would block the loop for ~170 ms.)
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { countInputTokens } from './count.js';
import { PiscinaTokenCounter } from './token-counter.js';

const counter = new PiscinaTokenCounter(1);
afterAll(() => counter.close());

describe('PiscinaTokenCounter', () => {
  it('counts small inputs and large inputs exactly like the tokenizer', async () => {
    expect(await counter.countInput(['hello world'])).toBe(countInputTokens(['hello world']));
    const large = 'lorem ipsum dolor sit amet '.repeat(2_000);
    expect(await counter.countInput([large])).toBe(countInputTokens([large]));
  });

  it('keeps the event loop free while an 8 MB prompt is counted', async () => {
    const prompt = 'The quick brown fox jumps over the lazy dog. '.repeat((8 * 1024 * 1024) / 45);
    await counter.countInput(['warm the worker up '.repeat(1000)]);
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
    const counted = await counter.countInput([prompt]);
    histogram.disable();
    expect(counted).toBeGreaterThan(1_800_000);
    expect(histogram.max / 1e6).toBeLessThan(70);
  });
});
