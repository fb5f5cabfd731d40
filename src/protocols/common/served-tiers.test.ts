import { describe, expect, it } from 'vitest';
import { ServedTierTracker, unpricedTiers, type ServedTierField } from './served-tiers.js';

const RULES: readonly ServedTierField[] = [
  { field: 'service_tier', standard: ['standard'], known: ['priority'] },
  { field: 'inference_geo', standard: ['global', 'not_available'], known: ['us'] },
];

describe('the tier a vendor says it served a call at', () => {
  it('names nothing for the standard values, null, or a field left out', () => {
    expect(unpricedTiers(RULES, { service_tier: 'standard', inference_geo: 'global' })).toBe(
      undefined,
    );
    expect(unpricedTiers(RULES, { inference_geo: 'not_available' })).toBeUndefined();
    expect(unpricedTiers(RULES, { service_tier: null, inference_geo: null })).toBeUndefined();
    expect(unpricedTiers(RULES, {})).toBeUndefined();
    for (const notAnObject of [undefined, null, 'priority', 3, ['priority']]) {
      expect(unpricedTiers(RULES, notAnObject)).toBeUndefined();
    }
  });

  it('names each other value, labelled by name when known and `other` when not', () => {
    expect(unpricedTiers(RULES, { service_tier: 'priority', inference_geo: 'us' })).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
      { field: 'inference_geo', reported: 'us', tier: 'us' },
    ]);
    expect(unpricedTiers(RULES, { inference_geo: 'eu' })).toEqual([
      { field: 'inference_geo', reported: 'eu', tier: 'other' },
    ]);
    // Case matters: the vendor's values are lower case, anything else is not its standard.
    expect(unpricedTiers(RULES, { service_tier: 'Standard' })).toEqual([
      { field: 'service_tier', reported: 'Standard', tier: 'other' },
    ]);
  });

  it('bounds what it repeats of the vendor: 40 characters, or the type of a value not text', () => {
    expect(unpricedTiers(RULES, { service_tier: 'x'.repeat(500) })).toEqual([
      { field: 'service_tier', reported: 'x'.repeat(40), tier: 'other' },
    ]);
    expect(unpricedTiers(RULES, { service_tier: 2, inference_geo: { geo: 'us' } })).toEqual([
      { field: 'service_tier', reported: '(number)', tier: 'other' },
      { field: 'inference_geo', reported: '(object)', tier: 'other' },
    ]);
  });

  it('follows a stream: each field as the last event naming it said', () => {
    const tracker = new ServedTierTracker(RULES);
    expect(tracker.unpricedTiers).toBeUndefined();
    tracker.observe({ service_tier: 'priority', inference_geo: 'global' });
    tracker.observe({ output_tokens: 9 }); // names neither: both stay
    expect(tracker.unpricedTiers).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
    ]);
    tracker.observe({ service_tier: 'standard', inference_geo: 'us' });
    expect(tracker.unpricedTiers).toEqual([{ field: 'inference_geo', reported: 'us', tier: 'us' }]);
  });

  it('reads a null as naming nothing: the value named before stays', () => {
    const tracker = new ServedTierTracker(RULES);
    tracker.observe({ service_tier: 'priority' });
    tracker.observe({ service_tier: null, output_tokens: 9 });
    expect(tracker.unpricedTiers).toEqual([
      { field: 'service_tier', reported: 'priority', tier: 'priority' },
    ]);
  });
});
