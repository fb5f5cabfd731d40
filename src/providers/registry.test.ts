import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { chatCompletionsProtocol } from '../protocols/wire-protocols.js';
import { defineProvider } from './common/provider.js';
import { findProvider, PROVIDER_IDS } from './registry.js';
import { providerSettings } from './system-routes.js';

describe('the provider registry', () => {
  it('lists vendor_a and vendor_b, with the environment variables operators set', () => {
    expect(PROVIDER_IDS).toEqual(['vendor_a', 'vendor_b']);
    expect(findProvider('vendor_a')?.env).toEqual({
      baseUrl: 'VENDOR_A_BASE_URL',
      apiKey: 'VENDOR_A_API_KEY',
    });
    const config = loadConfig({
      VENDOR_A_BASE_URL: 'http://a.example',
      VENDOR_B_API_KEY: 'b-key',
    });
    expect(
      providerSettings([findProvider('vendor_a')!, findProvider('vendor_b')!], config),
    ).toEqual({
      vendor_a: { baseUrl: 'http://a.example', apiKey: undefined },
      vendor_b: { baseUrl: undefined, apiKey: 'b-key' },
    });
    expect(findProvider('vendor_c')).toBeUndefined();
  });

  it('checks a credential with each vendor’s own headers', () => {
    expect(findProvider('vendor_a')?.validationHeaders('sk-a')).toEqual({
      'x-api-key': 'sk-a',
      'anthropic-version': '2023-06-01',
    });
    expect(findProvider('vendor_b')?.validationHeaders('sk-b')).toEqual({
      authorization: 'Bearer sk-b',
    });
  });

  it('gives a provider its policy, error label and cooldowns from its id', () => {
    const provider = defineProvider({
      id: 'vendor_c',
      protocol: chatCompletionsProtocol,
      headers: () => ({}),
    });
    expect(provider.defaultModelPolicy).toEqual(['vendor_c/*']);
    expect(provider.upstreamError(500, '', undefined).message).toBe('vendor_c answered 500');
    expect(provider.credentialCooldownMs(429, '{}', '2')).toBe(2000);
  });

  it('refuses an id that cannot name environment variables or model ids', () => {
    for (const id of ['Vendor', 'vendor-c', '', '1vendor']) {
      expect(() =>
        defineProvider({ id, protocol: chatCompletionsProtocol, headers: () => ({}) }),
      ).toThrow(/must match/);
    }
  });
});
