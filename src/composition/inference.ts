// Start-up, what the inference routes send requests out with: the token counter's threads,
// the vendor connection pools, each vendor's system route (the built-in mock vendors where they
// serve it) and the catalog of the models served.
import type { Closers } from '../closers.js';
import { ModelCatalog } from '../catalog/models.js';
import type { Config } from '../config.js';
import type { DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from '../metrics.js';
import { startMockVendors } from '../mock-vendors/server.js';
import type { Provider } from '../providers/common/provider.js';
import { PROVIDERS } from '../providers/registry.js';
import {
  buildSystemRoutes,
  mockServedVendors,
  providerSettings,
  type SystemRoutes,
  type VendorSettings,
} from '../providers/system-routes.js';
import { UpstreamClient } from '../providers/upstream.js';
import { PiscinaTokenCounter } from '../tokens/token-counter.js';

const CATALOG_REFRESH_MS = 60_000;

/** A provider the gateway is started with beyond the registry's, and its system route. */
export interface ExtraProvider {
  readonly provider: Provider;
  readonly settings: VendorSettings;
}

export interface Inference {
  readonly tokenCounter: PiscinaTokenCounter;
  readonly upstream: UpstreamClient;
  /** The registered providers, then the extra ones. */
  readonly providers: readonly Provider[];
  readonly systemRoutes: SystemRoutes;
  readonly catalog: ModelCatalog;
}

/** All of it started (the catalog read once, then refreshed each minute), closed by `closers`. */
export async function startInference(
  config: Config,
  logger: Logger,
  { db, metrics }: { readonly db: DbPool; readonly metrics: GatewayMetrics },
  extraProviders: readonly ExtraProvider[],
  closers: Closers,
): Promise<Inference> {
  const tokenCounter = closers.add(
    'token counter',
    new PiscinaTokenCounter(config.TOKEN_WORKERS, {
      maxWaitingPerOrg: config.TOKEN_QUEUE_PER_ORG,
      onRefused: () => metrics.tokenCountsRefused.inc(),
    }),
    (counter) => counter.close(),
  );
  const upstream = closers.add(
    'upstream client',
    new UpstreamClient(config.UPSTREAM_TIMEOUT_MS, config.UPSTREAM_CONNECTIONS),
    (client) => client.close(),
  );

  const providers = [...PROVIDERS, ...extraProviders.map((extra) => extra.provider)];
  const vendorSettings = providerSettings(PROVIDERS, config);
  for (const extra of extraProviders) vendorSettings[extra.provider.id] = extra.settings;
  const mockVendors = mockServedVendors(vendorSettings, config.MOCK_VENDORS);
  const mock =
    mockVendors.length > 0
      ? closers.add(
          'mock vendors',
          await startMockVendors({
            host: '127.0.0.1',
            port: 0,
            latencyMs: config.MOCK_VENDOR_LATENCY_MS,
            tokensPerSecond: config.MOCK_VENDOR_TOKENS_PER_SECOND,
          }),
          (server) => server.close(),
        )
      : undefined;
  const systemRoutes = buildSystemRoutes(vendorSettings, mockVendors, mock?.url);
  if (mock) {
    logger.warn(
      { vendors: mockVendors },
      'the built-in mock vendors answer these vendors: development only, never real traffic',
    );
  }
  // A system route without its key reaches the vendor, which refuses every request (401, a 502
  // to the client): say so at boot rather than at the first request.
  const keyless = PROVIDERS.filter(
    (provider) =>
      vendorSettings[provider.id]?.baseUrl !== undefined &&
      vendorSettings[provider.id]?.apiKey === undefined,
  ).map((provider) => provider.env.apiKey);
  if (keyless.length > 0) {
    logger.warn(
      { unset: keyless },
      'a vendor base URL is set without its API key: its requests go without one, and a vendor refuses them',
    );
  }
  const catalog = new ModelCatalog(
    db,
    providers.filter((provider) => systemRoutes[provider.id] !== undefined),
  );
  await catalog.refresh();
  const catalogTimer = closers.add(
    'catalog refresh',
    setInterval(() => {
      catalog
        .refresh()
        .catch((error: unknown) => logger.warn({ err: error }, 'catalog refresh failed'));
    }, CATALOG_REFRESH_MS),
    clearInterval,
  );
  catalogTimer.unref();
  return { tokenCounter, upstream, providers, systemRoutes, catalog };
}
