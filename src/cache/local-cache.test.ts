// The cache building block, with a fake clock and hand-released loads: no I/O, no waiting.
import { describe, expect, it } from 'vitest';
import { LocalCache, type LocalCacheOptions } from './local-cache.js';

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function cacheWithClock(options: Partial<LocalCacheOptions<string>> = {}) {
  const clock = { nowMs: 1_000 };
  const cache = new LocalCache<string>({
    ttlMs: 1_000,
    negativeTtlMs: 100,
    maxEntries: 100,
    maxBytes: 1_000_000,
    now: () => clock.nowMs,
    ...options,
  });
  let loads = 0;
  const loader = (value: string | undefined) => (): Promise<string | undefined> => {
    loads += 1;
    return Promise.resolve(value);
  };
  return { cache, clock, loader, loads: () => loads };
}

describe('LocalCache', () => {
  it('serves a value until its TTL, then loads again', async () => {
    const { cache, clock, loader, loads } = cacheWithClock();
    expect(await cache.get('k', loader('v1'))).toBe('v1');
    clock.nowMs += 999;
    expect(await cache.get('k', loader('v2'))).toBe('v1');
    clock.nowMs += 1;
    expect(await cache.get('k', loader('v2'))).toBe('v2');
    expect(loads()).toBe(2);
  });

  it('remembers a miss for the negative TTL only', async () => {
    const { cache, clock, loader, loads } = cacheWithClock();
    for (let i = 0; i < 50; i += 1)
      expect(await cache.get('unknown', loader(undefined))).toBe(undefined);
    expect(loads()).toBe(1);
    expect(cache.stats().negativeHits).toBe(49);
    clock.nowMs += 100;
    expect(await cache.get('unknown', loader('created'))).toBe('created');
    expect(loads()).toBe(2);
  });

  it('does not remember misses when the negative TTL is 0', async () => {
    const { cache, loader, loads } = cacheWithClock({ negativeTtlMs: 0 });
    await cache.get('unknown', loader(undefined));
    await cache.get('unknown', loader(undefined));
    expect(loads()).toBe(2);
  });

  it('loads once for concurrent callers of one key (single flight)', async () => {
    const { cache } = cacheWithClock();
    const release = deferred<string | undefined>();
    let loads = 0;
    const load = (): Promise<string | undefined> => {
      loads += 1;
      return release.promise;
    };
    const callers = Array.from({ length: 20 }, () => cache.get('k', load));
    release.resolve('v');
    expect(await Promise.all(callers)).toEqual(Array(20).fill('v'));
    expect(loads).toBe(1);
  });

  it('keeps nothing from a failed load, and every waiter sees the failure', async () => {
    const { cache, loader, loads } = cacheWithClock();
    const release = deferred<string | undefined>();
    const first = cache.get('k', () => release.promise);
    const second = cache.get('k', () => release.promise);
    release.reject(new Error('db down'));
    await expect(first).rejects.toThrow('db down');
    await expect(second).rejects.toThrow('db down');
    expect(await cache.get('k', loader('v'))).toBe('v');
    expect(loads()).toBe(1);
  });

  it('a load running when its key is invalidated answers its callers but stores nothing', async () => {
    const { cache, loader, loads } = cacheWithClock();
    const readBeforeRevoke = deferred<string | undefined>();
    const inFlight = cache.get('key', () => readBeforeRevoke.promise);
    cache.invalidate('key'); // the revoke lands between the read and the fill
    readBeforeRevoke.resolve('active');
    expect(await inFlight).toBe('active');
    expect(await cache.get('key', loader('revoked'))).toBe('revoked');
    expect(loads()).toBe(1);
  });

  it('a load running when everything is invalidated stores nothing', async () => {
    const { cache, loader } = cacheWithClock();
    const readBeforeRevoke = deferred<string | undefined>();
    const inFlight = cache.get('key', () => readBeforeRevoke.promise);
    cache.invalidateAll();
    readBeforeRevoke.resolve('active');
    await inFlight;
    expect(await cache.get('key', loader('revoked'))).toBe('revoked');
  });

  it('a caller after an invalidation does not join the stale load', async () => {
    const { cache } = cacheWithClock();
    const stale = deferred<string | undefined>();
    const fresh = deferred<string | undefined>();
    const before = cache.get('key', () => stale.promise);
    cache.invalidate('key');
    const after = cache.get('key', () => fresh.promise);
    fresh.resolve('revoked');
    stale.resolve('active');
    expect(await before).toBe('active');
    expect(await after).toBe('revoked');
    expect(await cache.get('key', () => Promise.resolve('other'))).toBe('revoked');
  });

  it('evicts the least recently used entry beyond maxEntries', async () => {
    const { cache, loader, loads } = cacheWithClock({ maxEntries: 2 });
    await cache.get('a', loader('A'));
    await cache.get('b', loader('B'));
    await cache.get('a', loader('A')); // a is now the most recent
    await cache.get('c', loader('C')); // evicts b
    expect(cache.stats()).toMatchObject({ entries: 2, evictions: 1 });
    await cache.get('a', loader('A'));
    expect(loads()).toBe(3);
    await cache.get('b', loader('B'));
    expect(loads()).toBe(4);
  });

  it('keeps the entry just stored when every older one was read since (second chance)', async () => {
    const { cache, loader, loads } = cacheWithClock({ maxEntries: 2 });
    await cache.get('a', loader('A'));
    await cache.get('b', loader('B'));
    await cache.get('a', loader('A'));
    await cache.get('b', loader('B')); // both read: both get a second chance
    await cache.get('c', loader('C')); // evicts a (the oldest once the marks are cleared), not c
    expect(cache.stats()).toMatchObject({ entries: 2, evictions: 1 });
    expect(loads()).toBe(3);
    await cache.get('c', loader('C'));
    await cache.get('b', loader('B'));
    expect(loads()).toBe(3);
    await cache.get('a', loader('A'));
    expect(loads()).toBe(4);
  });

  it('evicts beyond maxBytes, and never keeps a value larger than the whole budget', async () => {
    const { cache, loader, loads } = cacheWithClock({
      maxBytes: 1_000,
      sizeOf: (value) => value.length,
    });
    await cache.get('a', loader('x'.repeat(600)));
    await cache.get('b', loader('x'.repeat(600)));
    expect(cache.stats().entries).toBe(1); // a went to make room for b
    expect(cache.stats().bytes).toBeLessThanOrEqual(1_000);
    await cache.get('huge', loader('x'.repeat(2_000)));
    await cache.get('huge', loader('x'.repeat(2_000)));
    expect(loads()).toBe(4);
    expect(cache.stats().entries).toBe(1);
  });

  it('bounds bytes by the structural estimate by default', async () => {
    const cache = new LocalCache<{ metadata: string }>({
      ttlMs: 1_000,
      negativeTtlMs: 0,
      maxEntries: 1_000_000,
      maxBytes: 1024 * 1024,
    });
    for (let i = 0; i < 100; i += 1) {
      await cache.get(`user-${i}`, () => Promise.resolve({ metadata: 'm'.repeat(100_000) }));
    }
    expect(cache.stats().bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(cache.stats().entries).toBeLessThan(10);
  });

  it('replaces a cached value the caller does not accept, loading per flight key', async () => {
    const { cache, loader, loads } = cacheWithClock();
    await cache.get('user', loader('profile-1'));
    expect(
      await cache.get('user', loader('profile-2'), {
        accept: (value) => value === 'profile-2',
        flightKey: 'user/profile-2',
      }),
    ).toBe('profile-2');
    expect(await cache.get('user', loader('never'), { accept: (v) => v === 'profile-2' })).toBe(
      'profile-2',
    );
    expect(loads()).toBe(2);
  });

  it('a TTL of 0 caches nothing', async () => {
    const { cache, loader, loads } = cacheWithClock({ ttlMs: 0, negativeTtlMs: 0 });
    await cache.get('k', loader('v'));
    await cache.get('k', loader('v'));
    expect(loads()).toBe(2);
    expect(cache.stats().entries).toBe(0);
  });

  describe('stale if error', () => {
    const failing = (calls: { count: number }) => (): Promise<string | undefined> => {
      calls.count += 1;
      return Promise.reject(new Error('connect ECONNREFUSED'));
    };

    it('serves an expired value while its reload fails, retrying at most once a second', async () => {
      const { cache, clock, loader } = cacheWithClock({ staleIfErrorMs: 60_000 });
      await cache.get('k', loader('v1'));
      clock.nowMs += 1_000; // expired
      const calls = { count: 0 };
      expect(await cache.get('k', failing(calls))).toBe('v1');
      expect(await cache.get('k', failing(calls))).toBe('v1'); // within the retry pause: no load
      expect(calls.count).toBe(1);
      clock.nowMs += 1_000;
      expect(await cache.get('k', failing(calls))).toBe('v1');
      expect(calls.count).toBe(2);
      expect(cache.stats().staleServed).toBe(2);
      clock.nowMs += 1_000;
      expect(await cache.get('k', loader('v2'))).toBe('v2'); // recovered: fresh again
    });

    it('stops serving it once the stale window has passed', async () => {
      const { cache, clock, loader } = cacheWithClock({ staleIfErrorMs: 5_000 });
      await cache.get('k', loader('v1'));
      clock.nowMs += 1_000 + 5_000;
      await expect(cache.get('k', failing({ count: 0 }))).rejects.toThrow('ECONNREFUSED');
    });

    it('never serves an invalidated value (a revoked key stays revoked)', async () => {
      const { cache, clock, loader } = cacheWithClock({ staleIfErrorMs: 60_000 });
      await cache.get('k', loader('v1'));
      clock.nowMs += 1_000;
      cache.invalidate('k');
      await expect(cache.get('k', failing({ count: 0 }))).rejects.toThrow('ECONNREFUSED');
    });

    it('never serves a value invalidated while its reload was failing', async () => {
      const { cache, clock, loader } = cacheWithClock({ staleIfErrorMs: 60_000 });
      await cache.get('k', loader('v1'));
      clock.nowMs += 1_000;
      const reload = deferred<string | undefined>();
      const answer = cache.get('k', () => reload.promise);
      cache.invalidate('k');
      reload.reject(new Error('connect ECONNREFUSED'));
      await expect(answer).rejects.toThrow('ECONNREFUSED');
    });
  });
});
