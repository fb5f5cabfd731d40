// The keys an instance knows to be past their own rate limit: answered until the wait the
// reserve gave runs out (with the time until the bucket is full again), per key and limit, and
// bounded in size.
import { describe, expect, it } from 'vitest';
import { RecentRateRefusals } from './recent-rate-refusals.js';

const T0 = 1_800_000_000_000;
/** A refusal by a bucket of `limitPerMinute` with `retryAfterMs` to wait, full again 5 s later. */
const refused = (limitPerMinute: number, retryAfterMs: number) => ({
  limitPerMinute,
  retryAfterMs,
  resetMs: retryAfterMs + 5_000,
});

describe('RecentRateRefusals', () => {
  it('answers a refusal until the wait runs out, with the wait left, then forgets it', () => {
    const refusals = new RecentRateRefusals();
    expect(refusals.refusal('key_a', 3, T0)).toBeUndefined();
    refusals.remember('key_a', T0, refused(3, 20_000));
    expect(refusals.refusal('key_a', 3, T0)).toEqual({
      limitPerMinute: 3,
      retryAfterMs: 20_000,
      resetMs: 25_000,
    });
    // The wait and the time until the bucket is full again both count down.
    expect(refusals.refusal('key_a', 3, T0 + 19_999)).toEqual({
      limitPerMinute: 3,
      retryAfterMs: 1,
      resetMs: 5_001,
    });
    // At T0 + 20 s the reserve lets it pass: the reserve is asked again.
    expect(refusals.refusal('key_a', 3, T0 + 20_000)).toBeUndefined();
    expect(refusals.size).toBe(0);
  });

  it('is per key and per limit: a changed limit is not answered from the old one', () => {
    const refusals = new RecentRateRefusals();
    refusals.remember('key_a', T0, refused(3, 20_000));
    expect(refusals.refusal('key_b', 3, T0)).toBeUndefined();
    expect(refusals.refusal('key_a', 1000, T0)).toBeUndefined();
    // A later refusal of the same key and limit replaces the earlier one.
    refusals.remember('key_a', T0 + 1_000, refused(3, 40_000));
    expect(refusals.refusal('key_a', 3, T0 + 1_000)?.retryAfterMs).toBe(40_000);
  });

  it('keeps at most its bound: lapsed entries go first, then the oldest', () => {
    const refusals = new RecentRateRefusals(10);
    for (let index = 0; index < 5; index += 1)
      refusals.remember(`lapsing_${index}`, T0, refused(1, 10));
    for (let index = 0; index < 5; index += 1)
      refusals.remember(`old_${index}`, T0, refused(1, 60_000));
    expect(refusals.size).toBe(10);
    // Full at T0 + 10: the five lapsed ones are dropped, the rest stay.
    refusals.remember('new_0', T0 + 10, refused(1, 60_000));
    expect(refusals.size).toBe(6);
    for (let index = 1; index < 5; index += 1)
      refusals.remember(`new_${index}`, T0 + 10, refused(1, 60_000));
    expect(refusals.size).toBe(10);
    // Full of live entries: the oldest go, down to 9 (then the new one).
    refusals.remember('newest', T0 + 10, refused(1, 60_000));
    expect(refusals.size).toBe(10);
    expect(refusals.refusal('old_0', 1, T0 + 10)).toBeUndefined();
    expect(refusals.refusal('old_1', 1, T0 + 10)).toBeDefined();
    expect(refusals.refusal('newest', 1, T0 + 10)).toBeDefined();
  });
});
