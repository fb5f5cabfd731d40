// Micro-benchmark: how long the event loop is blocked while a 1 MB prompt is counted, inline
// versus in the piscina worker pool (run: node dist/bench/micro/event-loop.js).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { countInputTokens } from '../../src/tokens/count.js';
import { PiscinaTokenCounter } from '../../src/tokens/token-counter.js';

const prompt = 'The quick brown fox jumps over the lazy dog. '.repeat((1024 * 1024) / 45);
const counter = new PiscinaTokenCounter(1);
await counter.countInput(['warm up '.repeat(2000)]);

async function blockedMs(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  await work();
  await new Promise((resolve) => setTimeout(resolve, 5));
  histogram.disable();
  return histogram.max / 1e6;
}

const inline = await blockedMs(async () => countInputTokens([prompt]));
const pooled = await blockedMs(() => counter.countInput([prompt]));
process.stdout.write(
  `1 MB prompt: event loop blocked up to ${inline.toFixed(1)} ms inline, ${pooled.toFixed(1)} ms with the worker pool\n`,
);
await counter.close();
