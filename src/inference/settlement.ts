// Settlement: turns what the upstream reported into costs and a usage record.
import type { UsageRecord, UsageStatus } from '../ledger/usage-record.js';
import { SETTLEMENT_CURRENCY } from '../money.js';
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import { usageCostNano, type CatalogModel } from '../catalog/models.js';
import type { EndReason } from './charging-policy.js';
import type { TokenUsage } from '../protocols/common/usage.js';

/** What a usage record names of the request itself: an admission's, or what admission knows
 * when it places the hold (the record of a request lost with its instance). */
export interface RecordedRequest {
  readonly requestId: string;
  readonly identity: ApiKeyIdentity;
  readonly model: CatalogModel;
  readonly productUser: { readonly id: string } | null;
  readonly reservedNano: bigint;
  /**
   * The instant admission picked the request's accounts' periods by: its record is dated by it
   * (`created_at`), so every sum by `created_at` counts it in the periods it was held and
   * charged on, however late it settles (docs/decisions.md, 402).
   */
  readonly admittedAt: Date;
}

/** A settled request as the charging policy decided it (tokens charged, status, reason). */
export interface RequestOutcome extends TokenUsage {
  readonly status: UsageStatus;
  readonly reason: EndReason;
  readonly upstreamStatus: number | null;
  readonly stream: boolean;
  readonly startedAtMs: number;
  /** The BYOK credential that served it; null when the system route (and the wallet) did. */
  readonly credentialId: string | null;
  /** True when the built-in mock vendor answered (a development tool, never real traffic). */
  readonly mock: boolean;
}

export function buildUsageRecord(admission: RecordedRequest, outcome: RequestOutcome): UsageRecord {
  const { model, identity } = admission;
  const sellCostNano = usageCostNano(outcome, model.price);
  const vendorCostNano = usageCostNano(outcome, model.cost);
  const settledAtMs = Date.now();
  return {
    requestId: admission.requestId,
    createdAt: admission.admittedAt,
    orgId: identity.orgId,
    appId: identity.appId,
    appConnectionId: identity.appConnectionId,
    apiKeyId: identity.keyId,
    oauthClientId: identity.oauthClientId ?? null,
    productUserId: admission.productUser?.id ?? null,
    model: model.id,
    vendor: model.vendor,
    route: outcome.credentialId ? 'byok' : 'system',
    credentialId: outcome.credentialId,
    stream: outcome.stream,
    status: outcome.status,
    upstreamStatus: outcome.upstreamStatus,
    inputTokens: outcome.inputTokens,
    outputTokens: outcome.outputTokens,
    cacheWriteTokens: outcome.cacheWriteTokens,
    cacheWrite1hTokens: outcome.cacheWrite1hTokens,
    cacheReadTokens: outcome.cacheReadTokens,
    webSearchRequests: outcome.webSearchRequests,
    currency: SETTLEMENT_CURRENCY,
    sellCostNano,
    vendorCostNano,
    // A BYOK credential pays its vendor directly: the org wallet pays only the system route.
    walletCostNano: outcome.credentialId ? 0n : sellCostNano,
    reservedNano: admission.reservedNano,
    latencyMs: Math.max(0, settledAtMs - outcome.startedAtMs),
    endReason: outcome.reason,
    servedByMock: outcome.mock,
  };
}
