// The system routes: where the gateway sends a vendor's requests when no BYOK credential
// serves them — the configured vendor base URL, or the built-in mock vendors. A vendor with no
// route is not served at all (its models answer gw_unsupported_model): the mock stands in only
// when no vendor is configured or when MOCK_VENDORS asks for it, never by accident.
import type { Provider } from './common/provider.js';

export interface VendorRoute {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  /** True when this is the in-process mock (a development tool, never billed traffic). */
  readonly mock: boolean;
}

/** Routes by provider id. */
export type SystemRoutes = Readonly<Partial<Record<string, VendorRoute>>>;

/** The key the gateway presents to its own in-process mock vendors. */
export const MOCK_SYSTEM_KEY = 'mock-system-key';

/** A vendor as configured: its base URL and key (both unset: not configured). */
export interface VendorSettings {
  readonly baseUrl: string | undefined;
  readonly apiKey: string | undefined;
}

/** Each provider's settings, read from its environment variables in `env` (the config). */
export function providerSettings(
  providers: readonly Provider[],
  env: object,
): Record<string, VendorSettings> {
  const values = env as Readonly<Record<string, string | undefined>>;
  const settings: Record<string, VendorSettings> = {};
  for (const provider of providers) {
    settings[provider.id] = {
      baseUrl: values[provider.env.baseUrl],
      apiKey: values[provider.env.apiKey],
    };
  }
  return settings;
}

/**
 * The vendors the built-in mock serves: every unconfigured vendor when no vendor is configured
 * at all (the offline default) or when `mockSwitch` asks for it; otherwise none, so a missing
 * base URL in production never bills real wallets for mock answers.
 */
export function mockServedVendors(
  settings: Readonly<Record<string, VendorSettings>>,
  mockSwitch: boolean,
): string[] {
  const entries = Object.entries(settings);
  const unconfigured = entries.filter(([, vendor]) => vendor.baseUrl === undefined);
  const noneConfigured = unconfigured.length === entries.length;
  return mockSwitch || noneConfigured ? unconfigured.map(([name]) => name) : [];
}

/** The system routes: configured vendors, plus the mock for `mockVendors` at `mockUrl`. */
export function buildSystemRoutes(
  settings: Readonly<Record<string, VendorSettings>>,
  mockVendors: readonly string[],
  mockUrl: string | undefined,
): SystemRoutes {
  const routes: Record<string, VendorRoute> = {};
  for (const [name, vendor] of Object.entries(settings)) {
    if (vendor.baseUrl !== undefined) {
      routes[name] = { baseUrl: vendor.baseUrl, apiKey: vendor.apiKey, mock: false };
    } else if (mockUrl !== undefined && mockVendors.includes(name)) {
      routes[name] = { baseUrl: mockUrl, apiKey: MOCK_SYSTEM_KEY, mock: true };
    }
  }
  return routes;
}
