// The usage record of a completed system-route request, for the bench's targets that settle
// through the real money layer without the gateway (the design floor, the micro-bench).
import type { UsageRecord } from '../src/ledger/usage-record.js';

export interface BenchRequest {
  readonly requestId: string;
  readonly orgId: string;
  readonly appConnectionId: string;
  readonly productUserId: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** What the request cost (sell, vendor and wallet alike). */
  readonly costNano: bigint;
  /** What its reserve held. */
  readonly heldNano: bigint;
}

export function benchUsageRecord(request: BenchRequest): UsageRecord {
  return {
    requestId: request.requestId,
    createdAt: new Date(),
    orgId: request.orgId,
    appId: 'app_bench',
    appConnectionId: request.appConnectionId,
    apiKeyId: 'key_bench',
    productUserId: request.productUserId,
    model: 'vendor_b/gpt-4o-mini',
    vendor: 'vendor_b',
    route: 'system',
    credentialId: null,
    stream: false,
    status: 'completed',
    upstreamStatus: 200,
    inputTokens: request.inputTokens,
    outputTokens: request.outputTokens,
    currency: 'USD',
    sellCostNano: request.costNano,
    vendorCostNano: request.costNano,
    walletCostNano: request.costNano,
    reservedNano: request.heldNano,
    latencyMs: 0,
  };
}
