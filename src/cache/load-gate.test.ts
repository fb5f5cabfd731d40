import { describe, expect, it } from 'vitest';
import { LoadGate, LoadGateFull } from './load-gate.js';

describe('LoadGate', () => {
  it('runs at most maxRunning loads, queues maxWaiting, refuses the rest', async () => {
    const gate = new LoadGate(2, 3);
    let running = 0;
    let peak = 0;
    const releases: Array<() => void> = [];
    const load = (): Promise<string> => {
      running += 1;
      peak = Math.max(peak, running);
      return new Promise((resolve) =>
        releases.push(() => {
          running -= 1;
          resolve('done');
        }),
      );
    };
    const calls = Array.from({ length: 10 }, () => gate.run(load).catch((error: unknown) => error));
    await Promise.resolve();
    expect(releases).toHaveLength(2);
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const results = await Promise.all(calls);
    expect(results.filter((result) => result === 'done')).toHaveLength(5);
    expect(results.filter((result) => result instanceof LoadGateFull)).toHaveLength(5);
    expect(peak).toBe(2);
  });

  it('frees its slot when a load fails', async () => {
    const gate = new LoadGate(1, 0);
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(() => Promise.resolve(1))).toBe(1);
  });
});
