// Every route the gateway serves, declared once each (see declaration.ts). The composition
// root binds this list to the services; /openapi.json is generated from it.
import type { Registry } from 'prom-client';
import type { ModelCatalog } from '../catalog/models.js';
import type { DbPool } from '../db/pool.js';
import type { ProxyDeps } from '../inference/proxy.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { AccountDeps } from './auth/deps.js';
import { csrfRoute } from './auth/csrf.js';
import { loginRoute } from './auth/login.js';
import { logoutRoute } from './auth/logout.js';
import { sessionRoute } from './auth/session.js';
import { chatCompletionsRoute } from './chat-completions.js';
import { createAppRoute, listAppsRoute } from './dashboard/apps.js';
import { listOrgsRoute } from './dashboard/orgs.js';
import { countTokensRoute } from './count-tokens.js';
import type { DeclaredRoute } from './declaration.js';
import { healthzRoute, readyzRoute, type ReadinessProbe } from './health.js';
import { keyUsageRoute } from './key-usage.js';
import { messagesRoute } from './messages.js';
import { metricsRoute } from './metrics.js';
import { modelsRoute } from './models.js';
import { openApiRoute } from './openapi.js';
import {
  creditGrantRoute,
  creditSummaryRoute,
  getProductUserRoute,
  putProductUserRoute,
  type ProductUserRouteDeps,
} from './product-users.js';

/** Everything any route's handler may be given; each handler declares the part it uses. */
export interface RouteDeps extends AccountDeps {
  readonly proxy: ProxyDeps;
  readonly catalog: ModelCatalog;
  readonly tokenCounter: TokenCounter;
  readonly db: DbPool;
  readonly productUsers: ProductUserRouteDeps;
  readonly readiness: ReadinessProbe;
  readonly metricsRegistry: Registry;
  readonly openApiDocument: Record<string, unknown>;
}

export const routeDeclarations: readonly DeclaredRoute<RouteDeps>[] = [
  healthzRoute,
  readyzRoute,
  metricsRoute,
  openApiRoute,
  chatCompletionsRoute,
  messagesRoute,
  countTokensRoute,
  modelsRoute,
  keyUsageRoute,
  getProductUserRoute,
  putProductUserRoute,
  creditSummaryRoute,
  creditGrantRoute,
  loginRoute,
  logoutRoute,
  csrfRoute,
  sessionRoute,
  listOrgsRoute,
  listAppsRoute,
  createAppRoute,
];

export { metricsRoute };
