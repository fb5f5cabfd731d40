// The shapes the dashboard API answers (src/routes/dashboard/**), read from the server's own
// response schemas, its answers modules: a field renamed or removed there fails `npm run
// typecheck` in the page that reads it. Type-only imports (nothing of the server enters the
// bundle), of modules that import zod alone (test/dashboard-types.test.ts, decision 532).
import type { z } from 'zod';
import type {
  creditsSchema,
  creditGrantSchema,
  productUserSchema,
} from '../../../src/routes/answers.js';
import type { usageTotalsSchema } from '../../../src/routes/answers.js';
import type {
  activityEntrySchema,
  auditEntrySchema,
  modelSchema,
  overviewSchema,
  usageGroupSchema,
  usageSchema,
  walletAlertSchema,
} from '../../../src/routes/dashboard/answers.js';
import type {
  apiKeySchema,
  createdApiKeySchema,
  issuedApiKeySchema,
} from '../../../src/routes/dashboard/api-keys/answers.js';
import type { appDetailSchema, appSchema } from '../../../src/routes/dashboard/apps/answers.js';
import type {
  capRuleSchema,
  capSetSchema,
  capStateSchema,
} from '../../../src/routes/dashboard/caps/answers.js';
import type {
  connectionSchema,
  orgConnectionSchema,
} from '../../../src/routes/dashboard/connections/answers.js';
import type {
  credentialSchema,
  writtenCredentialSchema,
} from '../../../src/routes/dashboard/credentials/answers.js';
import type { productUserSummarySchema } from '../../../src/routes/dashboard/product-users/answers.js';
import type {
  issuedServiceKeySchema,
  serviceKeyScopeSchema,
  serviceKeySchema,
} from '../../../src/routes/dashboard/service-keys/answers.js';
import type {
  walletReadSchema,
  walletTransactionSchema,
} from '../../../src/routes/dashboard/wallet/answers.js';

import type { connectedAppSchema } from '../../../src/routes/dashboard/connected-apps/answers.js';
import type {
  createdInvitationSchema,
  invitationSchema,
} from '../../../src/routes/dashboard/invitations/answers.js';
import type { memberSchema } from '../../../src/routes/dashboard/members/answers.js';
import type {
  createdOAuthClientSchema,
  oauthClientSchema,
  rotatedOAuthClientSchema,
} from '../../../src/routes/dashboard/oauth-clients/answers.js';
import type {
  deliverySchema,
  webhookSchema,
  testQueuedSchema,
  webhookWithSecretSchema,
} from '../../../src/routes/dashboard/webhooks/answers.js';

/** An object's declared fields, without the index signature a `.loose()` schema adds. */
type Declared<T> = { [K in keyof T as string extends K ? never : K]: T[K] };

export type AppRow = z.output<typeof appSchema>;

/** One app as its page shows it (GET /dashboard/api/apps/{id}). */
export type AppDetail = z.output<typeof appDetailSchema>;

export type ConnectionRow = z.output<typeof connectionSchema>;

/** A connection as the organization-wide list shows it: with its app's name. */
export type OrgConnection = z.output<typeof orgConnectionSchema>;

/** 'oauth_token' (`kind`): the `gw_oauth_…` token of an OAuth connection (never rotated; its
 * limits are set as a key's). */
export type ApiKeyRow = z.output<typeof apiKeySchema>;

export type ServiceKeyScope = z.output<typeof serviceKeyScopeSchema>;

export type ServiceKeyRow = z.output<typeof serviceKeySchema>;

/** A key as created or rotated (an API key or a service key): the raw key is in this answer only. */
export type IssuedKey = Pick<
  z.output<typeof issuedApiKeySchema> | z.output<typeof issuedServiceKeySchema>,
  'id' | 'key' | 'key_hint'
>;

/** A new API key as its create answer has it, with the exact model ids of its policy the
 * catalogue does not list (issued all the same). */
export type CreatedApiKey = z.output<typeof createdApiKeySchema>;

export type ProductUserSummary = z.output<typeof productUserSummarySchema>;

export type Credits = z.output<typeof creditsSchema>;

export type UsageTotals = z.output<typeof usageTotalsSchema>;

/** A product user's profile: `cap` is null when no cap applies to the user. */
export type ProductUserProfile = Declared<z.output<typeof productUserSchema>>;

export type CreditGrant = z.output<typeof creditGrantSchema>;

export type UsageGroup = z.output<typeof usageGroupSchema>;

type AnsweredUsageRow = z.output<typeof usageSchema>['data'][number];
/** Of input_tokens: written to the prompt cache (of them kept an hour), read from it; and the
 * web searches. Always answered now; optional here, as a page served during a rolling deploy
 * may read an API older than them (and shows them as absent, not as 0). */
type NewerUsageCounts =
  'cache_write_tokens' | 'cache_write_1h_tokens' | 'cache_read_tokens' | 'web_search_requests';
export type UsageRow = Omit<AnsweredUsageRow, NewerUsageCounts> &
  Partial<Pick<AnsweredUsageRow, NewerUsageCounts>>;

export type Usage = Omit<z.output<typeof usageSchema>, 'data'> & { readonly data: UsageRow[] };

export type CapRule = z.output<typeof capRuleSchema>;

export type CapState = z.output<typeof capStateSchema>;

/** A set cap's answer: the level, and the API's warnings (the cap is already used up). */
export type CapSetAnswer = z.output<typeof capSetSchema>;

/** The wallet, and whether this gateway takes top-ups from the dashboard
 * (DASHBOARD_WALLET_TOPUP). */
export type Wallet = z.output<typeof walletReadSchema>;

export type WalletTransaction = z.output<typeof walletTransactionSchema>;

export type WalletAlert = z.output<typeof walletAlertSchema>;

/** The overview; its counts are of the apps that are not deleted and their connections. */
export type Overview = z.output<typeof overviewSchema>;

export type AuditEntry = z.output<typeof auditEntrySchema>;

/** One entry of the account's own activity, with the organization it was in. */
export type ActivityEntry = z.output<typeof activityEntrySchema>;

export type CredentialRow = z.output<typeof credentialSchema>;

/** A credential as its create, change or grant answers it, with its warnings: that it is granted
 * to no connection (first), exact model ids of the policy written that the catalogue does not
 * list: stored all the same (decisions 338, 456). */
export type WrittenCredential = z.output<typeof writtenCredentialSchema>;

/** A member of the organization (`personal_organization`: the member's own, which they always
 * own: the API refuses a change). */
export type MemberRow = z.output<typeof memberSchema>;

/** An invitation as the API answers it (members page and the invitations banner). */
export type Invitation = z.output<typeof invitationSchema>;

/** The answer to making one: the invitation with its accept token and link, shown once. */
export type SentInvitation = z.output<typeof createdInvitationSchema>;

/** A webhook endpoint (`earlier_secrets_expire_at`: the secrets retired before the last
 * rotation that still sign, each until then). */
export type WebhookEndpoint = z.output<typeof webhookSchema>;

/** A created endpoint or a rotated secret: the secret is in this answer only. */
export type WebhookEndpointWithSecret = z.output<typeof webhookWithSecretSchema>;

/** A test event queued: the message its delivery log shows. */
export type WebhookTestQueued = z.output<typeof testQueuedSchema>;

export type WebhookDelivery = z.output<typeof deliverySchema>;

/** An OAuth client (`retired_secrets_expire_at`: until when each secret retired by a rotation
 * still authenticates, soonest first). */
export type OAuthClient = z.output<typeof oauthClientSchema>;

/** A connected app as the organization that pays for it sees it (`token_id`: the app's OAuth
 * token, whose limits these are, null: none was issued; `monthly_cap`: its connection's, null:
 * none). */
/** A client as created: a confidential one's secret is in this answer only. */
export type CreatedOAuthClient = z.output<typeof createdOAuthClientSchema>;

/** A client whose secret was just rotated: the new secret is in this answer only. */
export type RotatedOAuthClient = z.output<typeof rotatedOAuthClientSchema>;

export type ConnectedApp = z.output<typeof connectedAppSchema>;

/** A routable model and its prices (`web_search_price_per_search` null: the model's vendor
 * runs no web search gw meters). */
export type ModelRow = z.output<typeof modelSchema>;
