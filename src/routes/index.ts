// Every route the gateway serves, declared once each (see declaration.ts). The composition
// root binds this list to the services; /openapi.json is generated from it.
import type { Registry } from 'prom-client';
import type { ApiKeyInvalidation } from '../auth/api-key-store.js';
import type { ModelCatalog } from '../catalog/models.js';
import type { DbPool } from '../db/pool.js';
import type { ProxyDeps } from '../inference/proxy.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { AccountDeps } from './auth/deps.js';
import { csrfRoute } from './auth/csrf.js';
import { loginRoute } from './auth/login.js';
import { logoutRoute } from './auth/logout.js';
import { logoutEverywhereRoute } from './auth/logout-everywhere.js';
import { changePasswordRoute } from './auth/password.js';
import { passwordResetConfirmRoute } from './auth/password-reset-confirm.js';
import { passwordResetRequestRoute } from './auth/password-reset-request.js';
import { sessionRoute } from './auth/session.js';
import { signupRoute } from './auth/signup.js';
import { verifyEmailRoute } from './auth/verify-email.js';
import { resendVerificationRoute } from './auth/verify-email-resend.js';
import { chatCompletionsRoute } from './chat-completions.js';
import type { ServiceKeyInvalidation } from '../admin/service-keys.js';
import { createApiKeyRoute } from './dashboard/api-keys/create.js';
import { listApiKeysRoute } from './dashboard/api-keys/list.js';
import { revokeApiKeyRoute } from './dashboard/api-keys/revoke.js';
import { rotateApiKeyRoute } from './dashboard/api-keys/rotate.js';
import { updateApiKeyRoute } from './dashboard/api-keys/update.js';
import type { CapInvalidation } from '../admin/caps.js';
import type { WalletService } from '../billing/wallets.js';
import { createAppRoute } from './dashboard/apps/create.js';
import { deleteAppRoute } from './dashboard/apps/delete.js';
import { getAppRoute } from './dashboard/apps/get.js';
import { listAppsRoute } from './dashboard/apps/list.js';
import { renameAppRoute } from './dashboard/apps/update.js';
import {
  clearConnectionCapRoute,
  clearOrgCapRoute,
  clearProductUserCapRoute,
} from './dashboard/caps/clear.js';
import {
  readConnectionCapRoute,
  readOrgCapRoute,
  readProductUserCapRoute,
} from './dashboard/caps/read.js';
import {
  setConnectionCapRoute,
  setOrgCapRoute,
  setProductUserCapRoute,
} from './dashboard/caps/set.js';
import { createCredentialRoute } from './dashboard/credentials/create.js';
import { deleteCredentialRoute } from './dashboard/credentials/delete.js';
import {
  grantCredentialRoute,
  revokeCredentialGrantRoute,
} from './dashboard/credentials/grants.js';
import { listCredentialsRoute } from './dashboard/credentials/list.js';
import type { CredentialRouteDeps } from './dashboard/credentials/schema.js';
import { updateCredentialRoute } from './dashboard/credentials/update.js';
import { overviewRoute } from './dashboard/overview.js';
import { readWalletRoute } from './dashboard/wallet/read.js';
import { topUpWalletRoute } from './dashboard/wallet/top-up.js';
import { walletTransactionsRoute } from './dashboard/wallet/transactions.js';
import { listOrgsRoute } from './dashboard/orgs.js';
import { auditLogRoute } from './dashboard/audit-log.js';
import { createConnectionRoute } from './dashboard/connections/create.js';
import { listConnectionsRoute } from './dashboard/connections/list.js';
import { listOrgConnectionsRoute } from './dashboard/connections/org-list.js';
import { revokeConnectionRoute } from './dashboard/connections/revoke.js';
import { updateConnectionRoute } from './dashboard/connections/update.js';
import { getMemberRoute } from './dashboard/members/get.js';
import { acceptInvitationRoute } from './dashboard/invitations/accept.js';
import { createInvitationRoute } from './dashboard/invitations/create.js';
import { declineInvitationRoute } from './dashboard/invitations/decline.js';
import { listInvitationsRoute } from './dashboard/invitations/list.js';
import { myInvitationsRoute } from './dashboard/invitations/mine.js';
import { userActivityRoute } from './dashboard/user-activity.js';
import { userMadeRecentlyRoute } from './dashboard/user-made-recently.js';
import { userMadeRecentlyReviewedRoute } from './dashboard/user-made-recently-reviewed.js';
import { revokeInvitationRoute } from './dashboard/invitations/revoke.js';
import { listMembersRoute } from './dashboard/members/list.js';
import { removeMemberRoute } from './dashboard/members/remove.js';
import { changeMemberRoleRoute } from './dashboard/members/update.js';
import { dashboardModelsRoute } from './dashboard/models.js';
import { createServiceKeyRoute } from './dashboard/service-keys/create.js';
import { disableServiceKeyRoute } from './dashboard/service-keys/disable.js';
import { listServiceKeysRoute } from './dashboard/service-keys/list.js';
import { revokeServiceKeyRoute } from './dashboard/service-keys/revoke.js';
import { createCreditGrantRoute } from './dashboard/credit-grants/create.js';
import { listCreditGrantsRoute } from './dashboard/credit-grants/list.js';
import { revokeCreditGrantRoute } from './dashboard/credit-grants/revoke.js';
import { productUserProfileRoute } from './dashboard/product-users/profile.js';
import { searchProductUsersRoute } from './dashboard/product-users/search.js';
import {
  blockProductUserRoute,
  unblockProductUserRoute,
} from './dashboard/product-users/status.js';
import { usageRoute } from './dashboard/usage.js';
import { getWalletAlertRoute, setWalletAlertRoute } from './dashboard/wallet-alert.js';
import { createWebhookRoute } from './dashboard/webhooks/create.js';
import { deleteWebhookRoute } from './dashboard/webhooks/delete.js';
import { webhookDeliveriesRoute } from './dashboard/webhooks/deliveries.js';
import { listWebhooksRoute } from './dashboard/webhooks/list.js';
import { redeliverWebhookRoute } from './dashboard/webhooks/redeliver.js';
import { rotateWebhookSecretRoute } from './dashboard/webhooks/rotate.js';
import type { WebhookRouteDeps } from './dashboard/webhooks/schema.js';
import { testWebhookRoute } from './dashboard/webhooks/test.js';
import { updateWebhookRoute } from './dashboard/webhooks/update.js';
import { listConnectedAppsRoute } from './dashboard/connected-apps/list.js';
import { revokeConnectedAppRoute } from './dashboard/connected-apps/revoke.js';
import { createOAuthClientRoute } from './dashboard/oauth-clients/create.js';
import { deleteOAuthClientRoute } from './dashboard/oauth-clients/delete.js';
import { rotateOAuthClientSecretRoute } from './dashboard/oauth-clients/rotate.js';
import { listOAuthClientsRoute } from './dashboard/oauth-clients/list.js';
import { authorizeDecisionRoute } from './oauth/authorize-decision.js';
import { authorizePageRoute } from './oauth/authorize-page.js';
import type { OAuthDeps } from './oauth/deps.js';
import { revokeTokenRoute } from './oauth/revoke.js';
import { serverMetadataRoute } from './oauth/server-metadata.js';
import { tokenRoute } from './oauth/token.js';
import { dashboardAssetRoute } from './dashboard-ui/asset.js';
import type { DashboardBundle } from './dashboard-ui/bundle.js';
import {
  dashboardModelsPageRoute,
  dashboardPageRoute,
  dashboardPagesRoute,
  dashboardRedirectRoute,
  dashboardSignInPageRoute,
} from './dashboard-ui/page.js';
import { countTokensRoute } from './count-tokens.js';
import { inSection, type DeclaredRoute, type RouteSection } from './framework/declaration.js';
import { healthzRoute } from './healthz.js';
import { readyzRoute, type ReadinessProbe } from './readyz.js';
import { keyUsageRoute } from './key-usage.js';
import { messagesRoute } from './messages.js';
import { metricsRoute } from './metrics.js';
import { modelRoute } from './model.js';
import { modelsRoute } from './models.js';
import { openApiRoute } from './openapi.js';
import { creditGrantRoute } from './product-users/credit-grant.js';
import { creditSummaryRoute } from './product-users/credit-summary.js';
import { getProductUserRoute } from './product-users/get.js';
import type { ProductUserRouteDeps } from './product-users/lookup.js';
import { putProductUserRoute } from './product-users/put.js';

/** Everything any route's handler may be given; each handler declares the part it uses. */
export interface RouteDeps extends AccountDeps, CredentialRouteDeps, OAuthDeps {
  readonly proxy: ProxyDeps;
  readonly catalog: ModelCatalog;
  readonly tokenCounter: TokenCounter;
  readonly db: DbPool;
  readonly apiKeys: ApiKeyInvalidation;
  readonly serviceKeys: ServiceKeyInvalidation;
  readonly caps: CapInvalidation;
  readonly wallets: Pick<WalletService, 'liveBalance' | 'topUp'>;
  /** Operator switches of the dashboard API (src/config.ts). */
  readonly dashboardSettings: { readonly walletTopUp: boolean };
  readonly productUsers: ProductUserRouteDeps;
  readonly webhooks: WebhookRouteDeps;
  readonly readiness: ReadinessProbe;
  readonly metricsRegistry: Registry;
  readonly openApiDocument: Record<string, unknown>;
  readonly dashboardBundle: DashboardBundle;
}

/** The sections of /openapi.json (the operational routes and the dashboard's pages have none). */
const sections = {
  inference: {
    name: 'inference',
    description:
      'Model calls with a gw API key or OAuth access token: chat completions, messages, token counts, models, the key usage',
  },
  productUsers: {
    name: 'product users',
    description: 'Your end users (product users), with a service key: their profiles and credits',
  },
  dashboard: {
    name: 'dashboard',
    description:
      'What the browser dashboard calls, with a session cookie: accounts, apps, keys, caps, wallet, credentials, webhooks',
  },
  oauth: {
    name: 'oauth',
    description:
      'Authorization-code flow with PKCE for third-party apps whose users pay from their own wallet',
  },
} as const satisfies Record<string, RouteSection>;

/** Every route, by section: /openapi.json tags a section's routes with it. */
export const routeDeclarations: readonly DeclaredRoute<RouteDeps>[] = [
  healthzRoute,
  readyzRoute,
  metricsRoute,
  openApiRoute,
  ...inSection(sections.inference, [
    chatCompletionsRoute,
    messagesRoute,
    countTokensRoute,
    modelsRoute,
    modelRoute,
    keyUsageRoute,
  ]),
  ...inSection(sections.productUsers, [
    getProductUserRoute,
    putProductUserRoute,
    creditSummaryRoute,
    creditGrantRoute,
  ]),
  ...inSection(sections.dashboard, [
    loginRoute,
    signupRoute,
    logoutRoute,
    logoutEverywhereRoute,
    changePasswordRoute,
    passwordResetRequestRoute,
    passwordResetConfirmRoute,
    verifyEmailRoute,
    resendVerificationRoute,
    csrfRoute,
    sessionRoute,
    listOrgsRoute,
    listAppsRoute,
    createAppRoute,
    getAppRoute,
    renameAppRoute,
    deleteAppRoute,
    listConnectionsRoute,
    listOrgConnectionsRoute,
    createConnectionRoute,
    updateConnectionRoute,
    revokeConnectionRoute,
    listApiKeysRoute,
    createApiKeyRoute,
    rotateApiKeyRoute,
    updateApiKeyRoute,
    revokeApiKeyRoute,
    listServiceKeysRoute,
    createServiceKeyRoute,
    revokeServiceKeyRoute,
    disableServiceKeyRoute,
    listMembersRoute,
    getMemberRoute,
    changeMemberRoleRoute,
    removeMemberRoute,
    listInvitationsRoute,
    createInvitationRoute,
    revokeInvitationRoute,
    myInvitationsRoute,
    acceptInvitationRoute,
    declineInvitationRoute,
    auditLogRoute,
    userActivityRoute,
    userMadeRecentlyRoute,
    userMadeRecentlyReviewedRoute,
    dashboardModelsRoute,
    usageRoute,
    overviewRoute,
    readOrgCapRoute,
    setOrgCapRoute,
    clearOrgCapRoute,
    readConnectionCapRoute,
    setConnectionCapRoute,
    clearConnectionCapRoute,
    readProductUserCapRoute,
    setProductUserCapRoute,
    clearProductUserCapRoute,
    readWalletRoute,
    walletTransactionsRoute,
    topUpWalletRoute,
    listCredentialsRoute,
    createCredentialRoute,
    updateCredentialRoute,
    deleteCredentialRoute,
    grantCredentialRoute,
    revokeCredentialGrantRoute,
    searchProductUsersRoute,
    productUserProfileRoute,
    blockProductUserRoute,
    unblockProductUserRoute,
    listCreditGrantsRoute,
    createCreditGrantRoute,
    revokeCreditGrantRoute,
    listWebhooksRoute,
    createWebhookRoute,
    updateWebhookRoute,
    deleteWebhookRoute,
    rotateWebhookSecretRoute,
    testWebhookRoute,
    webhookDeliveriesRoute,
    redeliverWebhookRoute,
    getWalletAlertRoute,
    setWalletAlertRoute,
    listOAuthClientsRoute,
    createOAuthClientRoute,
    deleteOAuthClientRoute,
    rotateOAuthClientSecretRoute,
    listConnectedAppsRoute,
    revokeConnectedAppRoute,
  ]),
  ...inSection(sections.oauth, [
    serverMetadataRoute,
    authorizePageRoute,
    authorizeDecisionRoute,
    tokenRoute,
    revokeTokenRoute,
  ]),
  dashboardRedirectRoute,
  dashboardPageRoute,
  dashboardSignInPageRoute,
  dashboardModelsPageRoute,
  dashboardAssetRoute,
  dashboardPagesRoute,
];

export { metricsRoute };
