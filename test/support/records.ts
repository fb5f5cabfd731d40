// A usage record for tests that drive the money layer directly: a completed system-route
// request costing `sellCostNano`, with any field overridden.
import { newRequestId } from '../../src/ids.js';
import type { UsageRecord } from '../../src/ledger/usage-record.js';

export function usageRecord(
  orgId: string,
  sellCostNano: bigint,
  overrides: Partial<UsageRecord> = {},
): UsageRecord {
  return {
    requestId: newRequestId(),
    createdAt: new Date(),
    orgId,
    appId: 'app_test',
    appConnectionId: 'conn_test',
    apiKeyId: 'key_test',
    productUserId: null,
    model: 'vendor_b/gpt-4o-mini',
    vendor: 'vendor_b',
    route: 'system',
    credentialId: null,
    stream: false,
    status: 'completed',
    upstreamStatus: 200,
    inputTokens: 10,
    outputTokens: 5,
    currency: 'USD',
    sellCostNano,
    vendorCostNano: sellCostNano,
    walletCostNano: 0n,
    reservedNano: sellCostNano,
    latencyMs: 1,
    ...overrides,
  };
}
