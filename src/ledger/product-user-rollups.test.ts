import { describe, expect, it } from 'vitest';
import { planProductUserRange } from './product-user-rollups.js';

const day = (text: string): Date => new Date(`${text}T00:00:00Z`);
const NOW = new Date('2026-11-23T15:00:00Z');

describe('planProductUserRange', () => {
  it('reads whole months from the monthly rollup, a year boundary included', () => {
    expect(planProductUserRange(day('2025-12-01'), day('2026-02-01'), NOW)).toEqual({
      months: ['2025-12-01', '2026-01-01'],
      added: [],
      subtracted: [],
    });
  });

  it('reads a short edge of a month from the daily rollup', () => {
    expect(planProductUserRange(day('2025-12-29'), day('2026-01-03'), NOW)).toEqual({
      months: [],
      added: [
        { first: '2025-12-29', end: '2026-01-01' },
        { first: '2026-01-01', end: '2026-01-03' },
      ],
      subtracted: [],
    });
  });

  it('reads most of a month as the month less the days outside the range', () => {
    // 30 days up to tomorrow: October's last 7 days, and November less its days after
    // today, which hold nothing yet.
    expect(planProductUserRange(day('2026-10-25'), day('2026-11-24'), NOW)).toEqual({
      months: ['2026-11-01'],
      added: [{ first: '2026-10-25', end: '2026-11-01' }],
      subtracted: [{ first: '2026-11-24', end: '2026-12-01' }],
    });
    // Inside one past month, both edges taken off.
    expect(planProductUserRange(day('2026-03-03'), day('2026-03-29'), NOW)).toEqual({
      months: ['2026-03-01'],
      added: [],
      subtracted: [
        { first: '2026-03-01', end: '2026-03-03' },
        { first: '2026-03-29', end: '2026-04-01' },
      ],
    });
  });

  it('covers every day of the range exactly once (added, or in a month and not subtracted)', () => {
    const DAY_MS = 24 * 3600 * 1000;
    const covered = (plan: ReturnType<typeof planProductUserRange>, at: number): number => {
      const text = new Date(at).toISOString().slice(0, 10);
      const inside = (list: { first: string; end: string }[]): number =>
        list.filter((d) => d.first <= text && text < d.end).length;
      return (
        plan.months.filter((month) => text.slice(0, 7) === month.slice(0, 7)).length +
        inside(plan.added) -
        inside(plan.subtracted)
      );
    };
    const start = day('2025-10-01').getTime();
    for (let from = start; from < start + 120 * DAY_MS; from += 7 * DAY_MS) {
      for (const length of [1, 2, 20, 31, 45, 366]) {
        const to = from + length * DAY_MS;
        const plan = planProductUserRange(new Date(from), new Date(to), NOW);
        for (let at = from - 40 * DAY_MS; at < to + 40 * DAY_MS; at += DAY_MS) {
          expect(covered(plan, at), new Date(at).toISOString()).toBe(at >= from && at < to ? 1 : 0);
        }
      }
    }
  });
});
