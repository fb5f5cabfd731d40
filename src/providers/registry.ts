// Every vendor the gateway serves, one line each. Config (its <ID>_BASE_URL/_API_KEY variables),
// the system routes, the catalogue, the routes, and the credentials CLI and check read this list.
import type { Provider } from './common/provider.js';
import { vendorA } from './vendor-a/provider.js';
import { vendorB } from './vendor-b/provider.js';

export const PROVIDERS = [vendorA, vendorB] as const;

export type ProviderId = (typeof PROVIDERS)[number]['id'];

export const PROVIDER_IDS: readonly ProviderId[] = PROVIDERS.map((provider) => provider.id);

/** The registered provider with this id, if any. */
export function findProvider(id: string): Provider | undefined {
  return PROVIDERS.find((provider) => provider.id === id);
}
