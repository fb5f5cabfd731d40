import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE_S, parseRetrySchedule, retryDelayMs } from './retry-schedule.js';

describe('retry schedule', () => {
  it('by default retries for about three days: minutes, then hours', () => {
    const totalS = DEFAULT_RETRY_SCHEDULE_S.reduce((sum, seconds) => sum + seconds, 0);
    expect(totalS / 86_400).toBeGreaterThan(2.5);
    expect(totalS / 86_400).toBeLessThan(3.5);
    expect(DEFAULT_RETRY_SCHEDULE_S[0]).toBe(60);
  });

  it('spreads each delay by ±20% and ends with the schedule', () => {
    expect(retryDelayMs([10], 0, () => 0)).toBe(8000);
    expect(retryDelayMs([10], 0, () => 1)).toBe(12_000);
    expect(retryDelayMs([10], 0, () => 0.5)).toBe(10_000);
    expect(retryDelayMs([10], 1)).toBeNull();
  });

  it('parses WEBHOOK_RETRY_SCHEDULE', () => {
    expect(parseRetrySchedule('1, 2,0.5')).toEqual([1, 2, 0.5]);
    for (const bad of ['', '1,,2', 'a', '-1', '0', String(8 * 86_400)]) {
      expect(() => parseRetrySchedule(bad)).toThrow(/delays in seconds/);
    }
  });
});
