import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { monthlyPeriod, periodBefore } from './periods.js';

const utc = (text: string): Date => new Date(text);

describe('monthlyPeriod', () => {
  it('uses calendar months without an anchor', () => {
    const period = monthlyPeriod(utc('2026-02-14T10:00:00Z'), null);
    expect(period.start.toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(period.end.toISOString()).toBe('2026-03-01T00:00:00.000Z');
  });

  it('answers each time with the calendar month of that time (the last month is reused)', () => {
    const times = [
      '2026-11-30T23:59:59.999Z',
      '2026-12-01T00:00:00.000Z',
      '2026-11-01T00:00:00.000Z',
      '2026-10-31T23:59:59.999Z',
      '2026-11-15T12:00:00.000Z',
    ];
    const starts = times.map((time) => monthlyPeriod(utc(time), null).start.toISOString());
    expect(starts).toEqual([
      '2026-11-01T00:00:00.000Z',
      '2026-12-01T00:00:00.000Z',
      '2026-11-01T00:00:00.000Z',
      '2026-10-01T00:00:00.000Z',
      '2026-11-01T00:00:00.000Z',
    ]);
    // A period asked for with an anchor is never the calendar month kept for the others.
    const anchored = monthlyPeriod(utc('2026-11-15T12:00:00Z'), utc('2026-01-10T00:00:00Z'));
    expect(anchored.start.toISOString()).toBe('2026-11-10T00:00:00.000Z');
    expect(monthlyPeriod(utc('2026-11-15T12:00:00Z'), null).start.toISOString()).toBe(
      '2026-11-01T00:00:00.000Z',
    );
  });

  it('clamps an anchor on the 31st to short months, then returns to the 31st', () => {
    const anchor = utc('2026-01-31T12:00:00Z');
    const feb = monthlyPeriod(utc('2026-02-20T00:00:00Z'), anchor);
    expect(feb.start.toISOString()).toBe('2026-01-31T12:00:00.000Z');
    expect(feb.end.toISOString()).toBe('2026-02-28T12:00:00.000Z');
    const march = monthlyPeriod(utc('2026-03-01T00:00:00Z'), anchor);
    expect(march.start.toISOString()).toBe('2026-02-28T12:00:00.000Z');
    expect(march.end.toISOString()).toBe('2026-03-31T12:00:00.000Z');
  });

  it('uses Feb 29 in leap years for anchors on the 29th-31st', () => {
    for (const day of [29, 30, 31]) {
      const anchor = utc(`2027-12-${day}T00:00:00Z`);
      const period = monthlyPeriod(utc('2028-03-01T00:00:00Z'), anchor);
      expect(period.start.toISOString()).toBe('2028-02-29T00:00:00.000Z');
    }
  });

  it('always contains the instant, tiles time without gaps, and lasts 28-31 days', () => {
    const instant = fc.date({
      min: new Date('2000-01-01T00:00:00Z'),
      max: new Date('2100-01-01T00:00:00Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(instant, fc.option(instant, { nil: null }), (at, anchor) => {
        const period = monthlyPeriod(at, anchor);
        expect(period.start.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(period.end.getTime()).toBeGreaterThan(at.getTime());
        const days = (period.end.getTime() - period.start.getTime()) / 86_400_000;
        expect(days).toBeGreaterThanOrEqual(28);
        expect(days).toBeLessThanOrEqual(31);
        // The next period starts exactly where this one ends.
        expect(monthlyPeriod(period.end, anchor).start.getTime()).toBe(period.end.getTime());
        // Its start day is the anchor's day, clamped to the month's length.
        if (anchor) {
          const start = period.start;
          const monthDays = new Date(
            Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 0),
          ).getUTCDate();
          expect(start.getUTCDate()).toBe(Math.min(anchor.getUTCDate(), monthDays));
        } else {
          expect(period.start.getUTCDate()).toBe(1);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('periodBefore is the period that ends where this one starts, under the same anchor', () => {
    const instant = fc.date({
      min: new Date('2000-01-01T00:00:00Z'),
      max: new Date('2100-01-01T00:00:00Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(instant, fc.option(instant, { nil: null }), (at, anchor) => {
        const period = monthlyPeriod(at, anchor);
        const before = monthlyPeriod(new Date(period.start.getTime() - 1), anchor);
        expect(periodBefore(period)).toEqual(before);
      }),
      { numRuns: 5000 },
    );
    // Every anchor day across a leap February and the months around it.
    for (let day = 1; day <= 31; day += 1) {
      const anchor = utc(`2027-01-${String(day).padStart(2, '0')}T23:59:59.999Z`);
      for (let month = 0; month < 14; month += 1) {
        const period = monthlyPeriod(new Date(Date.UTC(2027, 11 + month, 15)), anchor);
        const before = monthlyPeriod(new Date(period.start.getTime() - 1), anchor);
        expect(periodBefore(period).key).toBe(before.key);
      }
    }
  });
});
