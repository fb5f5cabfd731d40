import { describe, expect, it } from 'vitest';
import { buildSystemRoutes, MOCK_SYSTEM_KEY, mockServedVendors } from './system-routes.js';

const unset = { baseUrl: undefined, apiKey: undefined };
const real = { baseUrl: 'https://vendor-b.example', apiKey: 'real-key' };

describe('which vendors the built-in mock serves', () => {
  it('serves every vendor when none is configured (the offline default)', () => {
    expect(mockServedVendors({ vendor_a: unset, vendor_b: unset }, false)).toEqual([
      'vendor_a',
      'vendor_b',
    ]);
  });

  it('serves none when one vendor is configured: the other is simply not routable', () => {
    const settings = { vendor_a: unset, vendor_b: real };
    expect(mockServedVendors(settings, false)).toEqual([]);
    expect(buildSystemRoutes(settings, [], undefined)).toEqual({
      vendor_b: { baseUrl: real.baseUrl, apiKey: 'real-key', mock: false },
    });
  });

  it('serves the unconfigured vendors beside a real one only when asked', () => {
    const settings = { vendor_a: unset, vendor_b: real };
    const mocked = mockServedVendors(settings, true);
    expect(mocked).toEqual(['vendor_a']);
    expect(buildSystemRoutes(settings, mocked, 'http://127.0.0.1:9')).toEqual({
      vendor_a: { baseUrl: 'http://127.0.0.1:9', apiKey: MOCK_SYSTEM_KEY, mock: true },
      vendor_b: { baseUrl: real.baseUrl, apiKey: 'real-key', mock: false },
    });
  });

  it('never replaces a configured vendor with the mock', () => {
    const settings = { vendor_a: real, vendor_b: real };
    expect(mockServedVendors(settings, true)).toEqual([]);
  });
});
