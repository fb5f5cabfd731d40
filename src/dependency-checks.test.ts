import { describe, expect, it } from 'vitest';
import { boundedDependencyChecks } from './dependency-checks.js';

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
