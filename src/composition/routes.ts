// Start-up, the routes' side: everything a route handler may be given (RouteDeps) and the
// authenticators of each caller kind, built from what the phases before started.
import { AccountMail } from '../accounts/account-mail.js';
import { DashboardAuthenticator } from '../accounts/dashboard-auth.js';
import { LoginThrottle } from '../accounts/login-throttle.js';
import { sessionSettingsOf, SessionStore } from '../accounts/sessions.js';
import { capInvalidation } from '../admin/caps.js';
import { serviceKeyInvalidation } from '../admin/service-keys.js';
import type { SettleSpool } from '../billing/settle-spool.js';
import type { Config } from '../config.js';
import type { MailOutbox } from '../email/outbox.js';
import { CredentialError, CredentialStore } from '../credentials/credential-store.js';
import type { DbPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { OAuthClientAuthenticator } from '../oauth/client-auth.js';
import { AuthorizationCodes, CODE_REPLAY_WINDOW_MS } from '../oauth/codes.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import { LiveBalanceReader } from '../product-users/live-balance.js';
import { ProductUserManagement } from '../product-users/management.js';
import { ProductUserProfiles } from '../product-users/profile.js';
import { loadDashboardBundle } from '../routes/dashboard-ui/bundle.js';
import type { Authenticators, DeclaredRoute } from '../routes/framework/declaration.js';
import { metricsRoute, routeDeclarations, type RouteDeps } from '../routes/index.js';
import type { ReadinessProbe } from '../routes/readyz.js';
import { firingCapMarks } from '../usage-events/cap-marks.js';
import type { WebhookSettings } from '../webhooks/endpoints.js';
import type { ShutdownState } from './shutdown-state.js';
import type { Inference } from './inference.js';
import type { Observability } from './observability.js';
import type { RedisConnections } from './redis.js';
import type { Stores } from './stores.js';
import { IdempotencyStore, type IdempotencyKeys } from '../idempotency/store.js';

export interface RouteParts {
  readonly db: DbPool;
  /** Where gw queues its outgoing e-mail (SMTP_URL), else null. */
  readonly mailOutbox: MailOutbox | null;
  readonly redis: RedisConnections;
  readonly observability: Observability;
  readonly stores: Stores;
  readonly inference: Inference;
  readonly settleSpool: SettleSpool;
  readonly webhookSettings: WebhookSettings;
  /** Whether the gateway drains (for /readyz), and the cut each proxy step watches. */
  readonly shutdown: Pick<ShutdownState, 'draining' | 'cut'>;
}

export interface WiredRoutes {
  /** Every declared route but /metrics, which is served on a listener of its own. */
  readonly served: readonly DeclaredRoute<RouteDeps>[];
  readonly deps: RouteDeps;
  readonly authenticators: Authenticators;
  /** The Idempotency-Keys of the routes declared idempotent (decision 372). */
  readonly idempotencyKeys: IdempotencyKeys;
}

/**
 * Every declared route but /metrics, which has its own listener (METRICS_HOST:METRICS_PORT,
 * loopback by default), never the public port.
 */
const served = routeDeclarations.filter((route) => route !== metricsRoute);

let openApiDocument: Record<string, unknown> | undefined;

/**
 * `/openapi.json`, built once per process: a pure function of the declarations, and ~0.2 s of
 * CPU to build (each gateway a test starts in its process used to build it again).
 */
function servedOpenApiDocument(): Record<string, unknown> {
  openApiDocument ??= buildOpenApiDocument(served);
  return openApiDocument;
}

/** Builds the route dependencies once; nothing here is started or needs closing. */
export function wireRoutes(config: Config, logger: Logger, parts: RouteParts): WiredRoutes {
  const { db, observability, stores, inference, shutdown } = parts;
  const { client: redis, keys, scripts } = parts.redis;
  const { metrics } = observability;
  const { apiKeys, serviceKeys, capPolicies, credentials, secretBox, invalidations } = stores;
  const { catalog, tokenCounter, systemRoutes } = inference;
  const services = {
    catalog,
    productUsers: stores.productUsers,
    capPolicies,
    credentials,
    tokenCounter,
    budget: stores.budget,
    settleSpool: parts.settleSpool,
  };
  const proxyDeps = {
    services,
    upstream: inference.upstream,
    systemRoutes,
    logger,
    shutdown: shutdown.cut,
    settledCounter: metrics,
    unpricedTierCounter: metrics,
    maxStreamEventBytes: config.MAX_SSE_EVENT_BYTES,
  };
  const readiness: ReadinessProbe = {
    check: observability.checkDependencies,
    essential: ['redis'],
    isDraining: () => shutdown.draining,
  };
  const sessions = new SessionStore(redis, keys, sessionSettingsOf(config));
  const oauthClients = new OAuthClientAuthenticator(db);
  const dashboardAuth = new DashboardAuthenticator(db, sessions, {
    // The origin users reach the gateway at is its own, whatever Host a proxy passes on.
    allowedOrigins: [
      ...(config.PUBLIC_ORIGIN === undefined ? [] : [config.PUBLIC_ORIGIN]),
      ...config.DASHBOARD_ALLOWED_ORIGINS,
    ],
    insecure: config.DASHBOARD_INSECURE_COOKIES,
    verificationRequired: parts.mailOutbox !== null,
  });
  const deps: RouteDeps = {
    accounts: {
      db,
      sessions,
      throttle: new LoginThrottle(redis, keys),
      signup: config.DASHBOARD_SIGNUP,
      // PUBLIC_ORIGIN is required with SMTP_URL (src/config.ts): links never follow a Host.
      mail:
        parts.mailOutbox && config.PUBLIC_ORIGIN !== undefined
          ? new AccountMail(parts.mailOutbox, config.PUBLIC_ORIGIN)
          : null,
    },
    proxy: proxyDeps,
    catalog,
    tokenCounter,
    db,
    apiKeys,
    serviceKeys: serviceKeyInvalidation(invalidations),
    caps: firingCapMarks(capInvalidation(redis, keys, invalidations), {
      db,
      redis,
      keys,
    }),
    wallets: stores.wallets,
    dashboardSettings: { walletTopUp: config.DASHBOARD_WALLET_TOPUP },
    // Validated against the vendor's system route (the built-in mock where it serves).
    credentialStore: new CredentialStore(db, invalidations, secretBox, (provider) => {
      const route = systemRoutes[provider];
      if (!route) {
        throw new CredentialError(`${provider} is not served by this gateway (no route to it)`);
      }
      return route.baseUrl;
    }),
    productUsers: {
      db,
      profiles: new ProductUserProfiles(db, new LiveBalanceReader(redis, keys, stores.loader)),
      management: new ProductUserManagement(db, redis, keys, scripts, invalidations),
    },
    webhooks: { db, settings: parts.webhookSettings },
    oauth: {
      db,
      codes: new AuthorizationCodes(redis, keys, scripts, {
        ttlMs: config.OAUTH_CODE_TTL_MS,
        replayWindowMs: CODE_REPLAY_WINDOW_MS,
      }),
      apiKeys,
      issuer: {
        publicOrigin: config.PUBLIC_ORIGIN,
        insecure: config.DASHBOARD_INSECURE_COOKIES,
      },
    },
    readiness,
    metricsRegistry: metrics.registry,
    openApiDocument: servedOpenApiDocument(),
    dashboardBundle: loadDashboardBundle(),
  };
  const authenticators: Authenticators = {
    apiKey: (headers) => apiKeys.authenticate(headers),
    serviceKey: (headers, scope) => serviceKeys.authenticate(headers, scope),
    session: (head, options) => dashboardAuth.session(head, options),
    orgMember: (head, role, org) => dashboardAuth.orgMember(head, role, org),
    dashboardVisitor: (head) => dashboardAuth.visitor(head),
    oauthClient: (headers, form) => oauthClients.authenticate(headers, form),
  };
  const idempotencyKeys = new IdempotencyStore(db, secretBox, config.IDEMPOTENCY_KEY_LEASE_MS);
  return { served, deps, authenticators, idempotencyKeys };
}
