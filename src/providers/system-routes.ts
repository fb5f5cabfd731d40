// The system routes: where the gateway sends a vendor's requests when no BYOK credential
// serves them — the configured vendor base URL, or the built-in mock vendors.
import type { Vendor } from '../catalog/models.js';

export interface VendorRoute {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  /** True when this is the in-process mock (no vendor configured). */
  readonly mock: boolean;
}

export type SystemRoutes = Readonly<Record<Vendor, VendorRoute>>;

/** The key the gateway presents to its own in-process mock vendors. */
export const MOCK_SYSTEM_KEY = 'mock-system-key';
