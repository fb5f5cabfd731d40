import { describe, expect, it } from 'vitest';
import { configSchema } from './config.js';
import { boundedDependencyChecks } from './dependency-checks.js';
import { GatewayMetrics } from './metrics.js';

const never = (): Promise<boolean> => new Promise<boolean>(() => undefined);

describe('boundedDependencyChecks', () => {
  it('reports each dependency as it answered', async () => {
    const check = boundedDependencyChecks(
      {
        redis: async () => true,
        postgres: async () => false,
        broken: () => Promise.reject(new Error('refused')),
      },
      1_000,
    );
    expect(await check()).toEqual({ redis: true, postgres: false, broken: false });
  });

  it('answers within the bound when a dependency hangs, with that dependency down', async () => {
    const check = boundedDependencyChecks({ redis: async () => true, postgres: never }, 50);
    const started = performance.now();
    expect(await check()).toEqual({ redis: true, postgres: false });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('does not start another check of a dependency while one is still running', async () => {
    let started = 0;
    let finish: (up: boolean) => void = () => undefined;
    const check = boundedDependencyChecks(
      {
        postgres: () => {
          started += 1;
          return new Promise<boolean>((resolve) => (finish = resolve));
        },
      },
      20,
    );
    expect(await check()).toEqual({ postgres: false });
    expect(await check()).toEqual({ postgres: false });
    expect(started).toBe(1);
    // The hung run answers at last: the next probe starts a fresh one.
    finish(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    const next = check();
    finish(true);
    expect(await next).toEqual({ postgres: true });
    expect(started).toBe(2);
  });
});

describe('the scrape of gw_dependency_up', () => {
  it('reports a dependency that starts hanging down, at the largest bound the configuration accepts', async () => {
    const shape = configSchema.shape.DEPENDENCY_CHECK_TIMEOUT_MS;
    // The largest accepted bound (the scrape waits at most 2 s on its probes: a check bounded
    // past that never reaches the gauge, which keeps saying 1 through the hang, decision 313).
    let largest = 0;
    for (const candidate of [1_000, 1_500, 1_900, 2_000, 2_500, 5_000, 60_000]) {
      if (shape.safeParse(String(candidate)).success) largest = candidate;
    }
    let hung = false;
    const check = boundedDependencyChecks(
      { postgres: () => (hung ? never() : Promise.resolve(true)) },
      largest,
    );
    const metrics = new GatewayMetrics(false, undefined, { dependencies: check });
    const up = async (): Promise<string | undefined> =>
      /^gw_dependency_up\{dependency="postgres"\} (\d)$/m.exec(
        await metrics.registry.metrics(),
      )?.[1];
    expect(await up()).toBe('1');
    hung = true;
    expect(await up()).toBe('0');
  }, 70_000);
});
